// Highlighting from a TextMate grammar, for CodeMirror's stream parser: the grammar of
// editors/vscode (one grammar for VS Code and the playground). It reads the part of TextMate
// grammars that grammar uses: `match` rules with a name or captures, `begin`/`end` rules with
// inner patterns, and `include` of the repository. Its regular expressions are written to mean
// the same in Oniguruma and in JavaScript.

import { StreamLanguage } from "@codemirror/language";

// TextMate scopes to CodeMirror's highlighting tags, most specific prefix first.
const TAGS = [
  ["comment", "comment"],
  ["constant.character.escape", "escape"],
  ["variable.other.interpolation", "special(string)"],
  ["string", "string"],
  ["keyword.control", "controlKeyword"],
  ["keyword.operator.logical", "logicOperator"],
  ["keyword.operator", "operator"],
  ["keyword", "definitionKeyword"],
  ["storage.type", "typeName"],
  ["constant.language", "bool"],
  ["constant.numeric", "number"],
  ["support.constant", "atom"],
  ["support.function", "function(variableName)"],
  ["variable.language", "standard(variableName)"],
  ["variable.parameter", "definition(variableName)"],
  ["variable.other.definition", "definition(variableName)"],
  ["entity.name.function", "keyword"],
  ["entity.name.type", "typeName"],
  ["punctuation", "punctuation"],
  ["variable", "variableName"],
];

/** The CodeMirror token type of a TextMate scope name (null: unstyled). */
export function tokenOf(scope) {
  if (!scope) return null;
  for (const [prefix, tag] of TAGS) {
    if (scope === prefix || scope.startsWith(prefix + ".")) return tag;
  }
  return null;
}

// A CodeMirror token type as the stream parser spells it: `definition(variableName)` becomes
// `variableName.definition`.
function streamToken(tag) {
  if (!tag) return null;
  const m = /^(\w+)\((\w+)\)$/.exec(tag);
  return m ? `${m[2]}.${m[1]}` : tag;
}

/** The grammar's rules with `include`s resolved and regular expressions compiled. */
export function compile(grammar) {
  const repository = grammar.repository || {};
  const seen = new Map();
  function rules(patterns) {
    const out = [];
    for (const p of patterns || []) {
      if (p.include) {
        const name = p.include.replace(/^#/, "");
        const target = repository[name];
        if (!target) throw new Error(`the grammar includes #${name}, which it does not define`);
        if (!seen.has(name)) {
          seen.set(name, []);
          const own = target.match || target.begin ? [rule(target)] : rules(target.patterns);
          seen.get(name).push(...own);
        }
        out.push(...seen.get(name));
      } else if (p.match || p.begin) {
        out.push(rule(p));
      } else if (p.patterns) {
        out.push(...rules(p.patterns));
      }
    }
    return out;
  }
  function rule(p) {
    const r = { name: p.name || null };
    if (p.match) {
      r.match = new RegExp(p.match, "yd");
      r.captures = p.captures || null;
    } else {
      r.begin = new RegExp(p.begin, "yd");
      r.end = new RegExp(p.end, "yd");
      r.inner = rules(p.patterns);
    }
    return r;
  }
  return rules(grammar.patterns);
}

// The tokens one match makes: [end offset, token] pieces from its captures, in order, the text
// between captures under the rule's own name.
function pieces(rule, m, start) {
  const own = streamToken(tokenOf(rule.name));
  const end = start + m[0].length;
  if (!rule.captures || !m.indices) return [[end, own]];
  const cut = [];
  for (const [group, capture] of Object.entries(rule.captures)) {
    const span = m.indices[Number(group)];
    if (span && span[1] > span[0]) cut.push([span[0], span[1], streamToken(tokenOf(capture.name))]);
  }
  cut.sort((a, b) => a[0] - b[0]);
  const out = [];
  let at = start;
  for (const [from, to, token] of cut) {
    if (from < at) continue;
    if (from > at) out.push([from, own]);
    out.push([to, token]);
    at = to;
  }
  if (end > at) out.push([end, own]);
  return out;
}

function matchAt(regex, stream) {
  regex.lastIndex = stream.pos;
  const m = regex.exec(stream.string);
  return m && m[0].length > 0 ? m : null;
}

/** A CodeMirror language highlighting with `grammar`. */
export function textmateLanguage(grammar) {
  const top = compile(grammar);
  return StreamLanguage.define({
    name: grammar.scopeName || "textmate",
    startState: () => ({ open: null, queue: [] }),
    copyState: (s) => ({ open: s.open, queue: s.queue.slice() }),
    token(stream, state) {
      if (state.queue.length) {
        const [end, token] = state.queue.shift();
        stream.pos = end;
        return token;
      }
      if (state.open) {
        const open = state.open;
        const ended = matchAt(open.end, stream);
        if (ended) {
          stream.pos += ended[0].length;
          state.open = null;
          return streamToken(tokenOf(open.name));
        }
        for (const r of open.inner) {
          const m = r.match && matchAt(r.match, stream);
          if (m) {
            stream.pos += m[0].length;
            return streamToken(tokenOf(r.name)) || streamToken(tokenOf(open.name));
          }
        }
        stream.next();
        return streamToken(tokenOf(open.name));
      }
      if (stream.eatSpace()) return null;
      for (const r of top) {
        if (r.begin) {
          const m = matchAt(r.begin, stream);
          if (m) {
            stream.pos += m[0].length;
            state.open = r;
            return streamToken(tokenOf(r.name));
          }
          continue;
        }
        const m = matchAt(r.match, stream);
        if (m) {
          const [first, ...rest] = pieces(r, m, stream.pos);
          state.queue = rest;
          stream.pos = first[0];
          return first[1];
        }
      }
      stream.next();
      return null;
    },
    languageData: { commentTokens: { line: "#" } },
  });
}
