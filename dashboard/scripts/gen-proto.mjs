// Generates the API's TypeScript types, with protobuf's canonical JSON mapping (fromJSON /
// toJSON), from the .proto files with ts-proto and Debian's protoc. Output: src/api/gen/
// (not committed). Usage: node scripts/gen-proto.mjs [--protoc PATH]
// The only source is ../proto, the files the controller is built from, so a field renamed
// there fails the dashboard's type check.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const realProto = join(root, "..", "proto");
const out = join(root, "src", "api", "gen");
const protocArg = process.argv.indexOf("--protoc");
const protoc = protocArg > 0 ? process.argv[protocArg + 1] : process.env.PROTOC || "protoc";

function protoFiles(dir) {
  const files = [];
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".proto")) files.push(relative(dir, path));
    }
  };
  if (existsSync(dir)) walk(dir);
  return files;
}

const files = protoFiles(realProto);
if (files.length === 0) throw new Error(`gen-proto: no .proto files under ${realProto}`);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const plugin = join(root, "node_modules", ".bin", "protoc-gen-ts_proto");
const options = [
  "outputEncodeMethods=false",
  "outputJsonMethods=true",
  "outputClientImpl=false",
  "outputServices=false",
  "outputPartialMethods=false",
  "forceLong=number",
  "esModuleInterop=true",
  "useDate=false",
].join(",");
const args = [
  `--plugin=protoc-gen-ts_proto=${plugin}`,
  `--ts_proto_out=${out}`,
  `--ts_proto_opt=${options}`,
  `--proto_path=${realProto}`,
  ...files.sort(),
];
execFileSync(protoc, args, { stdio: "inherit" });
console.log(`gen-proto: ${files.length} files -> src/api/gen`);
