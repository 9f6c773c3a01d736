import { Link } from "../components/Link";
import { useTitle } from "../hooks";

export function NotFoundPage({ what }: { what: string }) {
  useTitle("Not found");
  return (
    <section class="notfound" data-testid="not-found">
      <h1>Not found</h1>
      <p>{what}</p>
      <p>
        <Link href="/">Fleet</Link> · <Link href="/runs">Runs</Link>
      </p>
    </section>
  );
}
