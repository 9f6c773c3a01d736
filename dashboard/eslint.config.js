import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "src/api/gen/"] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    files: ["src/**/*.{ts,tsx}"],
    languageOptions: { globals: globals.browser },
    rules: {
      // With noUncheckedIndexedAccess, `xs[i]!` after a bounds check is the honest spelling.
      "@typescript-eslint/no-non-null-assertion": "off",
      // Nothing user-supplied is ever inserted as HTML.
      "no-restricted-syntax": [
        "error",
        {
          selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']",
          message: "never insert HTML",
        },
        { selector: "MemberExpression[property.name='innerHTML']", message: "never insert HTML" },
        { selector: "MemberExpression[property.name='outerHTML']", message: "never insert HTML" },
        {
          selector: "CallExpression[callee.property.name='insertAdjacentHTML']",
          message: "never insert HTML",
        },
      ],
      "no-restricted-globals": ["error", { name: "eval", message: "the CSP forbids it" }],
    },
  },
  {
    files: ["scripts/**/*.mjs", "*.config.{js,ts}"],
    languageOptions: { globals: globals.node },
  },
  {
    // Browser tests run in node and hand functions to the page (page.evaluate).
    files: ["tests/**/*.mjs"],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  prettier,
);
