import { defineConfig } from "vite";

// The controller serves dist/ (tlbfleet-controller --dashboard-dir, or by default the build
// tree's dashboard/dist). TLBFLEET_DASHBOARD_OUT moves the output there from CMake.
export default defineConfig({
  base: "/",
  build: {
    outDir: process.env.TLBFLEET_DASHBOARD_OUT ?? "dist",
    emptyOutDir: true,
    // The controller's CSP allows no inline script: keep every script an external file.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: true,
  },
  server: {
    // `npm run dev`: the API comes from a controller on loopback.
    proxy: { "/api": process.env.TLBFLEET_API ?? "http://127.0.0.1:8080" },
  },
  test: {
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
    environment: "node",
  },
});
