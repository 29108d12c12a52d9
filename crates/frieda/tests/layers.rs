//! The `frieda` crate's top-level modules depend one way: each uses only modules of lower layers
//! (issue 28). [`LAYERS`] is the one declaration of the order (mirrored in the crate docs,
//! `src/lib.rs`); this test reads every `.rs` file under `src/`, finds each reference to another
//! top-level module (`crate::x`, `use crate::{x, ..}`, `super::x` where `super` is the crate root,
//! `pub(in crate::x)`) outside comments and literals, and fails naming the file, line and edge of
//! every reference to a module of the same or a higher layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may refer only to modules of the layers before its own.
/// A new top-level module must be placed here (and in the list in `src/lib.rs`).
const LAYERS: &[&[&str]] = &[
    &[
        "clock",
        "durable",
        "stats",
        "quota",
        "features",
        "replication",
        "logging",
        "remote",
    ],
    &["security"],
    &["storage"],
    &["coordinator", "diskless"],
    &["config"],
    &["membership"],
    &["broker"],
    &["cluster"],
    &["tiering"],
    &["handlers"],
    &["server"],
    &["metrics"],
    &["admin"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// A reference from one top-level module to another, at a line of a file.
#[derive(Debug, PartialEq, Eq)]
struct Reference {
    line: usize,
    to: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// `src` with comments, string, byte-string and character literals blanked out (newlines kept, so
/// line numbers hold).
fn blank_comments_and_literals(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, from: &[char]| {
        for &c in from {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && ident_char(chars[i - 1]);
        if c == '/' && next == Some('/') {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |p| i + p);
            blank(&mut out, &chars[i..end]);
            i = end;
        } else if c == '/' && next == Some('*') {
            // block comments nest
            let (mut depth, mut j) = (1, i + 2);
            while j < chars.len() && depth > 0 {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &chars[i..j]);
            i = j;
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && {
            let k = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[k..].iter().take_while(|&&c| c == '#').count();
            chars.get(k + hashes) == Some(&'"')
        } {
            // raw string: r"..", r#".."#, br".."
            let k = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[k..].iter().take_while(|&&c| c == '#').count();
            let mut j = k + hashes + 1;
            while j < chars.len() {
                if chars[j] == '"'
                    && chars[j + 1..].iter().take_while(|&&c| c == '#').count() >= hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            let j = j.min(chars.len());
            blank(&mut out, &chars[i..j]);
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let j = (j + 1).min(chars.len());
            blank(&mut out, &chars[i..j]);
            i = j;
        } else if c == '\'' && next == Some('\\') {
            // escaped character literal: '\n', '\'', '\u{..}'
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            let j = (j + 1).min(chars.len());
            blank(&mut out, &chars[i..j]);
            i = j;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            // character literal 'x' (a lifetime 'a has no closing quote)
            blank(&mut out, &chars[i..i + 3]);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The tokens of blanked source that matter for paths, each with its line.
fn tokens(blanked: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = blanked.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // raw identifiers: r#type
            if word == "r" && chars.get(i) == Some(&'#') {
                i += 1;
                continue;
            }
            out.push((line, Token::Ident(word)));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((line, Token::PathSep));
            i += 2;
        } else {
            out.push((line, Token::Punct(c)));
            i += 1;
        }
    }
    out
}

fn ident(tokens: &[(usize, Token)], i: usize) -> Option<&str> {
    match tokens.get(i) {
        Some((_, Token::Ident(w))) => Some(w),
        _ => None,
    }
}

fn is(tokens: &[(usize, Token)], i: usize, t: &Token) -> bool {
    tokens.get(i).map(|(_, x)| x) == Some(t)
}

/// The first segments of the paths at `tokens[i..]`, just after `crate::` (or the `super::`s
/// that reach the crate root): one identifier, or each item of a `{..}` use group.
fn root_segments(tokens: &[(usize, Token)], i: usize) -> Vec<(usize, String)> {
    if let Some(w) = ident(tokens, i) {
        return vec![(tokens[i].0, w.to_string())];
    }
    let mut found = Vec::new();
    if !is(tokens, i, &Token::Punct('{')) {
        return found;
    }
    let (mut depth, mut j, mut item_start) = (0, i, true);
    while j < tokens.len() {
        match &tokens[j].1 {
            Token::Punct('{') => {
                depth += 1;
                item_start = depth == 1;
            }
            Token::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Token::Punct(',') if depth == 1 => item_start = true,
            Token::Ident(w) if item_start && depth == 1 => {
                found.push((tokens[j].0, w.clone()));
                item_start = false;
            }
            _ => item_start = false,
        }
        j += 1;
    }
    found
}

/// The references to top-level modules in one file whose module path (from the crate root) is
/// `module_path`; `super` chains are resolved through inline `mod name { .. }` blocks.
fn references(src: &str, module_path: &[String]) -> Vec<Reference> {
    let toks = tokens(&blank_comments_and_literals(src));
    let mut found = Vec::new();
    // brace depth at which each open inline module's block started
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].1 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline_mods.last() == Some(&depth) {
                    inline_mods.pop();
                }
            }
            Token::Ident(w)
                if w == "mod"
                    && ident(&toks, i + 1).is_some()
                    && is(&toks, i + 2, &Token::Punct('{')) =>
            {
                inline_mods.push(depth);
            }
            Token::Ident(w)
                if w == "crate"
                    && is(&toks, i + 1, &Token::PathSep)
                    && !(i > 0 && is(&toks, i - 1, &Token::PathSep)) =>
            {
                for (line, to) in root_segments(&toks, i + 2) {
                    found.push(Reference { line, to });
                }
            }
            Token::Ident(w) if w == "super" && !(i > 0 && is(&toks, i - 1, &Token::PathSep)) => {
                let mut supers = 0;
                let mut j = i;
                while ident(&toks, j) == Some("super") && is(&toks, j + 1, &Token::PathSep) {
                    supers += 1;
                    j += 2;
                }
                if supers == module_path.len() + inline_mods.len() {
                    for (line, to) in root_segments(&toks, j) {
                        found.push(Reference { line, to });
                    }
                }
                i = j.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of each file under `src`: from its place in the tree, or from the
/// `#[path = ".."] mod name;` that includes it.
fn module_paths(src: &Path, files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<String>> {
    let mut paths = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let mut segments: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if segments.last().is_some_and(|s| s == "mod") {
            segments.pop();
        }
        paths.insert(f.clone(), segments);
    }
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[path = \"") {
            rest = &rest[at + 10..];
            let Some(end) = rest.find('"') else { break };
            let target = f.parent().unwrap().join(&rest[..end]);
            let after = &rest[end..];
            if let Some(m) = after.find("mod ") {
                let name: String = after[m + 4..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let mut path = paths[f].clone();
                path.push(name);
                paths.insert(target, path);
            }
        }
    }
    paths
}

fn crate_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level modules `src/lib.rs` declares.
fn declared_modules() -> Vec<String> {
    let lib = std::fs::read_to_string(crate_src().join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            Some(l.strip_prefix("mod ")?.strip_suffix(';')?.to_string())
        })
        .collect()
}

#[test]
fn every_module_has_a_layer() {
    let declared: BTreeSet<String> = declared_modules().into_iter().collect();
    let listed: BTreeSet<String> = LAYERS
        .iter()
        .flat_map(|l| l.iter().map(|m| m.to_string()))
        .collect();
    assert_eq!(
        declared, listed,
        "src/lib.rs declares these top-level modules, tests/layers.rs's LAYERS lists those: place \
         each module in one layer"
    );
}

#[test]
fn modules_depend_only_on_lower_layers() {
    let src = crate_src();
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    files.sort();
    let paths = module_paths(&src, &files);
    // error locations relative to the workspace root (crates/frieda/src/..)
    let workspace = src.ancestors().nth(3).unwrap().to_path_buf();
    let mut violations = Vec::new();
    let mut edges = 0;
    for f in &files {
        let module_path = &paths[f];
        let from = module_path[0].as_str();
        if from == "lib" || from == "main" {
            continue;
        }
        let from_layer = layer_of(from)
            .unwrap_or_else(|| panic!("{}: module `{from}` is in no layer of LAYERS", f.display()));
        let text = std::fs::read_to_string(f).unwrap();
        for r in references(&text, module_path) {
            let Some(to_layer) = layer_of(&r.to) else {
                continue;
            };
            if r.to == from {
                continue;
            }
            edges += 1;
            if to_layer >= from_layer {
                let how = if to_layer == from_layer {
                    "the same"
                } else {
                    "higher"
                };
                violations.push(format!(
                    "{}:{}: `{from}` (layer {}) uses `{}` (layer {}: {how})",
                    f.strip_prefix(&workspace).unwrap_or(f).display(),
                    r.line,
                    from_layer + 1,
                    r.to,
                    to_layer + 1,
                ));
            }
        }
    }
    assert!(
        edges > 0,
        "no references between modules found: is the scanner broken?"
    );
    assert!(
        violations.is_empty(),
        "{} reference(s) against the layering: a module may use only modules of lower layers \
         (LAYERS in crates/frieda/tests/layers.rs, layer 1 at the bottom; the list in \
         crates/frieda/src/lib.rs). Move what is used down, or the code using it up:\n  {}",
        violations.len(),
        violations.join("\n  ")
    );
}

#[test]
fn lib_docs_list_the_layers_in_order() {
    // src/lib.rs lists the layers top-down, each module named as [`module`].
    let lib = std::fs::read_to_string(crate_src().join("lib.rs")).unwrap();
    let mut order: Vec<String> = Vec::new();
    for line in lib.lines().filter(|l| l.starts_with("//!")) {
        let mut rest = line;
        while let Some(at) = rest.find("[`") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find("`]") else { break };
            let name = &rest[..end];
            if layer_of(name).is_some() && !order.iter().any(|m| m == name) {
                order.push(name.to_string());
            }
            rest = &rest[end..];
        }
    }
    let missing: Vec<&str> = LAYERS
        .iter()
        .flat_map(|l| l.iter().copied())
        .filter(|m| !order.iter().any(|o| o == m))
        .collect();
    assert!(
        missing.is_empty(),
        "src/lib.rs's layer list does not name {missing:?}"
    );
    for pair in order.windows(2) {
        let (upper, lower) = (layer_of(&pair[0]).unwrap(), layer_of(&pair[1]).unwrap());
        assert!(
            upper >= lower,
            "src/lib.rs lists `{}` above `{}`, but LAYERS in tests/layers.rs has it lower",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn the_scanner_finds_references_and_skips_comments_and_literals() {
    let src = r##"
//! crate::a in a module doc
use crate::b::X;
use crate::{c, d::{e, f}, self};
/// crate::g in a doc comment
fn h() {
    let s = "crate::i";
    let r = r#"crate::j"#;
    let c = '"'; let l: &'static str = "";
    /* crate::k /* nested */ crate::k */
    crate::m::call();
    super::n::call();
    pub(in crate::o) fn p() {}
}
mod tests {
    use super::*;
    use super::super::q;
}
"##;
    let found: Vec<(usize, String)> = references(src, &["root".to_string()])
        .into_iter()
        .map(|r| (r.line, r.to))
        .collect();
    let expected = [
        (3, "b"),
        (4, "c"),
        (4, "d"),
        (4, "self"),
        (11, "m"),
        (12, "n"),
        (13, "o"),
        (17, "q"),
    ];
    assert_eq!(found, expected.map(|(l, m)| (l, m.to_string())));
}
