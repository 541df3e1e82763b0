//! The layers of the architecture (DESIGN.md, "Layout"; docs/architecture.md), checked on the
//! source text: each layer names only the layers below it, and mm/ never compares kernel
//! generations (it asks a named predicate of `Generation`, scenario/generation.rs).
//!
//! The check reads the files under src/ with std::fs and looks at their code only: comments,
//! string and char literals, and items under `#[cfg(test)]` (unit tests may set up with any
//! layer) are left out.

use std::path::{Path, PathBuf};

/// What a layer must not name.
enum Forbidden {
    /// Any identifier with one of these names (a module of a layer above, or a crate).
    Names(&'static [&'static str]),
    /// A path `crate::<name>` to one of these top-level modules.
    CrateModules(&'static [&'static str]),
    /// A comparison of kernel generations: a `Generation::V…` variant, or `generation` (a field
    /// or a call) compared with `<`, `>`, `<=`, `>=`, `==` or `!=`.
    GenerationComparisons,
}

struct Rule {
    /// The directory under src/ the rule applies to.
    layer: &'static str,
    forbidden: Forbidden,
}

// The rules, one per test below.
const MM_STATS_CLI: Rule = Rule {
    layer: "mm",
    forbidden: Forbidden::Names(&["stats", "cli", "foliosim_cli"]),
};
const MM_WORKLOAD: Rule = Rule {
    layer: "mm",
    forbidden: Forbidden::Names(&["workload"]),
};
const MM_SERDE_JSON: Rule = Rule {
    layer: "mm",
    forbidden: Forbidden::Names(&["serde_json"]),
};
const MM_GENERATIONS: Rule = Rule {
    layer: "mm",
    forbidden: Forbidden::GenerationComparisons,
};
const SCENARIO: Rule = Rule {
    layer: "scenario",
    forbidden: Forbidden::CrateModules(&["workload", "mm"]),
};
const SIM: Rule = Rule {
    layer: "sim",
    forbidden: Forbidden::CrateModules(&["scenario", "mm", "workload", "stats", "check"]),
};
const MACHINE: Rule = Rule {
    layer: "machine",
    forbidden: Forbidden::CrateModules(&["scenario", "mm", "workload", "stats", "check"]),
};
// Traces are input, like scenarios: the replay (workload/trace_replay.rs) reads them.
const TRACE: Rule = Rule {
    layer: "trace",
    forbidden: Forbidden::CrateModules(&["scenario", "mm", "workload", "stats", "check", "run"]),
};

#[test]
fn mm_does_not_name_stats_or_the_cli() {
    assert_rule(&MM_STATS_CLI);
}

#[test]
fn mm_does_not_name_workload() {
    assert_rule(&MM_WORKLOAD);
}

#[test]
fn mm_does_not_name_serde_json() {
    assert_rule(&MM_SERDE_JSON);
}

#[test]
fn mm_does_not_compare_generations() {
    assert_rule(&MM_GENERATIONS);
}

#[test]
fn scenario_does_not_name_workload_or_mm() {
    assert_rule(&SCENARIO);
}

#[test]
fn sim_names_nothing_above_it() {
    assert_rule(&SIM);
}

#[test]
fn machine_names_nothing_above_it() {
    assert_rule(&MACHINE);
}

#[test]
fn trace_names_nothing_of_the_engine() {
    assert_rule(&TRACE);
}

/// The checker itself: a violation in code is found, the same text in a comment, a string or a
/// test module is not.
#[test]
fn the_checker_finds_violations_in_code_only() {
    let code = tokens(
        "use crate::workload::task::Task; // crate::stats\n\
         fn f(k: &Kernel) -> bool { k.generation() >= Generation::V6_12 }\n\
         const S: &str = \"serde_json\"; /* cli */\n\
         #[cfg(test)]\nmod tests { use crate::stats::Vm; }\n",
    );
    let names = |list| violations(&code, &Forbidden::Names(list));
    assert_eq!(names(&["workload"]), vec!["workload"]);
    assert!(names(&["stats", "cli", "serde_json"]).is_empty());
    assert_eq!(
        violations(&code, &Forbidden::CrateModules(&["workload", "mm"])),
        vec!["crate::workload"]
    );
    assert_eq!(
        violations(&code, &Forbidden::GenerationComparisons),
        vec!["generation() >=", "Generation::V6_12"]
    );
    let field = tokens("let s = if spec.profile.generation < Generation::V6_18 { 1 } else { 2 };");
    assert_eq!(
        violations(&field, &Forbidden::GenerationComparisons),
        vec!["generation <", "Generation::V6_18"]
    );
    let predicate = tokens("if self.generation().counts_per_size_split() { g: Generation }");
    assert!(violations(&predicate, &Forbidden::GenerationComparisons).is_empty());
}

/// Fails with every violation of `rule` in its layer.
fn assert_rule(rule: &Rule) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join(rule.layer), &mut files);
    assert!(
        !files.is_empty(),
        "no source files under src/{}",
        rule.layer
    );
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, v) in violations_at(&tokens(&text), &rule.forbidden) {
            found.push(format!("src/{rel}:{line}: {v}"));
        }
    }
    assert!(
        found.is_empty(),
        "src/{} breaks the layering:\n  {}",
        rule.layer,
        found.join("\n  ")
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A token of code: an identifier (or number) or one punctuation character.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
}

/// The code's tokens, each with its line (from 1).
struct Code {
    toks: Vec<Tok>,
    lines: Vec<usize>,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The code's tokens, without comments, literals' contents and `#[cfg(test)]` items.
fn tokens(text: &str) -> Code {
    let c: Vec<char> = text.chars().collect();
    // The line each character is on.
    let mut line_of = Vec::with_capacity(c.len());
    let mut line = 1;
    for &ch in &c {
        line_of.push(line);
        line += (ch == '\n') as usize;
    }
    let mut toks = Vec::new();
    let mut lines = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let before = toks.len();
        let start_line = line_of[i];
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == 'r'
            && matches!(next, Some('"') | Some('#'))
            && raw_string_end(&c, i).is_some()
        {
            i = raw_string_end(&c, i).unwrap();
            toks.push(Tok::Punct('"'));
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            toks.push(Tok::Punct('"'));
        } else if ch == '\'' {
            // A char literal ('x', '\n', '"'), else a lifetime or label ('a).
            if next == Some('\\') {
                // The quote, the backslash and the escaped character.
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                toks.push(Tok::Punct('\''));
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                toks.push(Tok::Punct('\''));
            } else {
                i += 1;
            }
        } else if is_ident_char(ch) {
            let start = i;
            while i < c.len() && is_ident_char(c[i]) {
                i += 1;
            }
            toks.push(Tok::Ident(c[start..i].iter().collect()));
        } else {
            toks.push(Tok::Punct(ch));
            i += 1;
        }
        if toks.len() > before {
            lines.push(start_line);
        }
    }
    without_cfg_test(Code { toks, lines })
}

/// Where a raw string starting at `i` (`r"…"`, `r#"…"#`) ends, if one starts there.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && is_ident_char(c[i - 1]) {
        return None;
    }
    let mut j = i + 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (1..=hashes).all(|h| c.get(j + h) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(c.len())
}

/// Drops each item under `#[cfg(test)]`: up to its `;`, or through its `{ … }` block.
fn without_cfg_test(code: Code) -> Code {
    let Code { toks, lines } = code;
    let attr: Vec<Tok> = ["#", "[", "cfg", "(", "test", ")", "]"]
        .iter()
        .map(|s| match *s {
            "cfg" | "test" => Tok::Ident(s.to_string()),
            p => Tok::Punct(p.chars().next().unwrap()),
        })
        .collect();
    let mut out = Code {
        toks: Vec::new(),
        lines: Vec::new(),
    };
    let mut i = 0;
    while i < toks.len() {
        if toks[i..].starts_with(&attr) {
            i += attr.len();
            let mut depth = 0;
            while i < toks.len() {
                let t = &toks[i];
                i += 1;
                match t {
                    Tok::Punct('{') => depth += 1,
                    Tok::Punct('}') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Punct(';') if depth == 0 => break,
                    _ => {}
                }
            }
        } else {
            out.toks.push(toks[i].clone());
            out.lines.push(lines[i]);
            i += 1;
        }
    }
    out
}

/// Each violation of `forbidden` in `code`, as text.
fn violations(code: &Code, forbidden: &Forbidden) -> Vec<String> {
    violations_at(code, forbidden)
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

/// Each violation of `forbidden` in `code`, with its line.
fn violations_at(code: &Code, forbidden: &Forbidden) -> Vec<(usize, String)> {
    let toks = &code.toks;
    let ident = |i: usize| match toks.get(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let punct = |i: usize, p: char| toks.get(i) == Some(&Tok::Punct(p));
    let path_sep = |i: usize| punct(i, ':') && punct(i + 1, ':');
    let mut found = Vec::new();
    for i in 0..toks.len() {
        match forbidden {
            Forbidden::Names(names) => {
                if let Some(name) = ident(i).filter(|n| names.contains(n)) {
                    found.push((code.lines[i], name.to_string()));
                }
            }
            Forbidden::CrateModules(modules) => {
                if ident(i) == Some("crate") && path_sep(i + 1) {
                    if let Some(m) = ident(i + 3).filter(|m| modules.contains(m)) {
                        found.push((code.lines[i], format!("crate::{m}")));
                    }
                }
            }
            Forbidden::GenerationComparisons => {
                if ident(i) == Some("Generation") && path_sep(i + 1) {
                    if let Some(v) = ident(i + 3).filter(|v| v.starts_with('V')) {
                        found.push((code.lines[i], format!("Generation::{v}")));
                    }
                }
                if ident(i) == Some("generation") {
                    let (mut j, mut text) = (i + 1, "generation".to_string());
                    if punct(j, '(') && punct(j + 1, ')') {
                        j += 2;
                        text.push_str("()");
                    }
                    let op = if punct(j, '=') && punct(j + 1, '=') {
                        Some("==")
                    } else if punct(j, '!') && punct(j + 1, '=') {
                        Some("!=")
                    } else if punct(j, '<') {
                        Some(if punct(j + 1, '=') { "<=" } else { "<" })
                    } else if punct(j, '>') {
                        Some(if punct(j + 1, '=') { ">=" } else { ">" })
                    } else {
                        None
                    };
                    if let Some(op) = op {
                        found.push((code.lines[i], format!("{text} {op}")));
                    }
                }
            }
        }
    }
    found
}
