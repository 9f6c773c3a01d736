import type { ComponentChildren, JSX } from "preact";
import { navigate } from "../hooks";

type Props = JSX.HTMLAttributes<HTMLAnchorElement> & { href: string; children: ComponentChildren };

/** An ordinary link (keyboard, middle-click, copy address) that navigates without a reload. */
export function Link({ href, children, ...rest }: Props) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) {
      return;
    }
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
