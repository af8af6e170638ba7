import { defineConfig } from "vite";

// Tauri loads the built files from ui/dist (see build.frontendDist in ../src-tauri/tauri.conf.json)
// and, under `tauri dev`, the dev server below (build.devUrl).
export default defineConfig({
  // Relative asset URLs so the bundle works from Tauri's custom protocol.
  base: "./",
  clearScreen: false,
  server: {
    port: 5173,
    strictPort: true,
    host: "127.0.0.1",
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // WebKitGTK 2.40+ / WebView2 / WKWebView all handle ES2022.
    target: "es2022",
    sourcemap: false,
  },
});
