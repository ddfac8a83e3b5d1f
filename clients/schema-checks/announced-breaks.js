// A graphql-inspector diff rule (make schema-check): the breaking changes
// announced in schema/release/announced-breaks.txt pass as dangerous, so
// that only an unannounced break fails the check. Each line of the file
// is a change's path as graphql-inspector names it (a type, `Type.field`
// or `Type.field.argument`), then why; # starts a comment. ANNOUNCED_BREAKS
// names another file (for e2e/schemacheck_test.go).
const fs = require('fs');
const path = require('path');

const listed = process.env.ANNOUNCED_BREAKS || path.join(__dirname, '..', '..', 'schema', 'release', 'announced-breaks.txt');

function announced() {
  const paths = new Set();
  for (const line of fs.readFileSync(listed, 'utf8').split('\n')) {
    const entry = line.replace(/#.*/, '').trim();
    if (entry) paths.add(entry.split(/\s+/)[0]);
  }
  return paths;
}

module.exports = ({ changes }) => {
  const paths = announced();
  return changes.map((change) => {
    if (change.criticality.level !== 'BREAKING' || !paths.has(change.path)) return change;
    return {
      ...change,
      message: `${change.message} (announced in schema/release/announced-breaks.txt)`,
      criticality: { ...change.criticality, level: 'DANGEROUS' },
    };
  });
};
