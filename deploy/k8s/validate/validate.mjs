// Validates every Kubernetes object in the YAML files of a directory against the Kubernetes
// API's JSON schemas (kubernetes-models, Kubernetes 1.27), without a cluster: known
// apiVersion/kind, required fields, types, enums and formats. The compiled schemas accept
// fields they do not know, so a misspelt optional field (`hostPid`) would pass: unknown
// fields are found separately, by walking the object along the models' type declarations
// (their .d.ts files list every field of every type).
//   node validate.mjs DIR
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { parseAllDocuments } from "yaml";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node validate.mjs DIR");
  process.exit(2);
}

// "apps/v1" -> kubernetes-models/apps/v1, "v1" -> kubernetes-models/v1
async function modelFor(apiVersion, kind) {
  const module = await import(`kubernetes-models/${apiVersion}`).catch(() => null);
  return module?.[kind] ?? null;
}

const require = createRequire(import.meta.url);
const packageDir = dirname(require.resolve("kubernetes-models/package.json"));
const nodeModules = dirname(packageDir);

// The fields of the interface declared in a .d.ts file: name -> {type, file} where `file` is
// the .d.ts of a nested object type (or null for a scalar, a map or an alias), and `array`
// says whether it is a list of them. null when the file declares no interface (an alias).
const declarations = new Map();
function fieldsOf(file) {
  if (declarations.has(file)) return declarations.get(file);
  const text = readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/import \{ (\w+) \} from "([^"]+)";/g)) {
    const target = m[2].startsWith(".")
      ? join(dirname(file), m[2])
      : join(nodeModules, m[2]);
    imports.set(m[1], target.replace(/\.js$/, "") + ".d.ts");
  }
  const start = text.search(/^export interface \w+/m);
  if (start < 0) {
    declarations.set(file, null);
    return null;
  }
  const fields = new Map();
  let depth = 0;
  for (const line of text.slice(start).split("\n").slice(1)) {
    const trimmed = line.trim();
    if (trimmed.startsWith("/**") || trimmed.startsWith("*")) continue;
    if (depth === 0) {
      if (trimmed === "}") break;
      const m = /^"([^"]+)"\??: (.*?);?$/.exec(trimmed);
      if (m) {
        const array = /^Array<(\w+)>$/.exec(m[2]);
        const name = array ? array[1] : m[2];
        fields.set(m[1], { file: imports.get(name) ?? null, array: Boolean(array) });
      }
    }
    depth += (line.match(/\{/g) ?? []).length - (line.match(/\}/g) ?? []).length;
  }
  declarations.set(file, fields);
  return fields;
}

// Paths of `value`'s fields that the type declared in `file` does not have.
function unknownFields(value, file, path) {
  const fields = file ? fieldsOf(file) : null;
  if (!fields || value === null || typeof value !== "object" || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const field = fields.get(key);
    if (!field) return [`${path}.${key}`];
    if (field.array) {
      return Array.isArray(v) ? v.flatMap((e, i) => unknownFields(e, field.file, `${path}.${key}[${i}]`)) : [];
    }
    return unknownFields(v, field.file, `${path}.${key}`);
  });
}

let failures = 0;
let objects = 0;
const files = readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
if (files.length === 0) {
  console.error(`${dir}: no .yaml files`);
  process.exit(1);
}
for (const file of files) {
  const docs = parseAllDocuments(readFileSync(join(dir, file), "utf8"));
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      console.error(`${file}: ${doc.errors[0].message}`);
      failures++;
      continue;
    }
    const object = doc.toJSON();
    if (object === null) continue;
    const where = `${file}: ${object.kind ?? "?"} ${object.metadata?.name ?? "?"}`;
    objects++;
    const Model = await modelFor(object.apiVersion, object.kind);
    if (!Model) {
      console.error(`${where}: unknown apiVersion/kind ${object.apiVersion}/${object.kind}`);
      failures++;
      continue;
    }
    try {
      new Model(object).validate();
      const declaration = join(packageDir, object.apiVersion, `${object.kind}.d.ts`);
      const extra = unknownFields(object, declaration, "");
      if (extra.length > 0) throw new Error(`unknown field(s): ${extra.join(", ")}`);
    } catch (e) {
      console.error(`${where}: ${e.message}`);
      failures++;
    }
  }
}
console.log(`${objects} object(s) in ${files.length} file(s), ${failures} invalid`);
process.exit(failures === 0 && objects > 0 ? 0 : 1);
