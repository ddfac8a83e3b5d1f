// Checks the web app's GraphQL operations against the schema, so that a
// schema change that breaks the app fails CI (`make check-clients`):
//   node scripts/check-webapp.mjs <dir of the app's .js files> [schema dir]
// Every string and template literal of the app's scripts that is an
// operation (it starts with query, mutation or subscription, or is the
// first argument of a gql(...) call) is parsed and validated with
// graphql-js. A template's ${name} is replaced by the text of the const
// of that name (a selection shared by several operations, as app.js's
// messageFields); any other interpolation in an operation is an error.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { buildSchema, parse, validate } from "graphql";

const [dir, schemaDir = new URL("../../../schema", import.meta.url).pathname] = process.argv.slice(2);
if (!dir) {
  console.error("usage: check-webapp.mjs <dir of .js files> [schema dir]");
  process.exit(2);
}
const sdl = readdirSync(schemaDir)
  .filter((f) => f.endsWith(".graphqls"))
  .sort()
  .map((f) => readFileSync(join(schemaDir, f), "utf8"))
  .join("\n");
const schema = buildSchema(sdl);

const problems = [];
let checked = 0;
for (const file of readdirSync(dir).filter((f) => f.endsWith(".js")).sort()) {
  const path = join(dir, file);
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  // The file's consts whose value is a string or a template: their text.
  const consts = new Map();
  const visitConsts = (node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && isText(node.initializer)) {
      consts.set(node.name.text, node.initializer);
    }
    ts.forEachChild(node, visitConsts);
  };
  visitConsts(source);
  const where = (node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const textOf = (node, seen = new Set()) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    let text = node.head.text;
    for (const span of node.templateSpans) {
      const e = span.expression;
      if (!ts.isIdentifier(e) || !consts.has(e.text) || seen.has(e.text)) {
        throw new Error(`${where(e)}: \${${e.getText()}} in an operation is not a const's text`);
      }
      text += textOf(consts.get(e.text), new Set([...seen, e.text])) + span.literal.text;
    }
    return text;
  };
  const visit = (node) => {
    if (isText(node)) {
      const call = node.parent && ts.isCallExpression(node.parent) && node.parent.arguments[0] === node ? node.parent : null;
      const gqlArg = call && /^(gql|post)$/.test(call.expression.getText().replace(/^.*\./, ""));
      const raw = ts.isTemplateExpression(node) ? node.head.text : node.text;
      if (gqlArg || /^\s*(query|mutation|subscription)\b/.test(raw)) {
        try {
          const errors = validate(schema, parse(textOf(node)));
          for (const e of errors) problems.push(`${where(node)}: ${e.message}`);
          checked++;
        } catch (err) {
          problems.push(`${where(node)}: ${err.message}`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

function isText(node) {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);
}

if (problems.length) {
  console.error(`the web app's operations do not match the schema:\n${problems.join("\n")}`);
  process.exit(1);
}
if (checked === 0) {
  console.error(`no operations found in ${dir}`);
  process.exit(1);
}
console.log(`${checked} operations of the web app validate against the schema`);
