//! Agreement files: `.code-intel/agreements/<id>.md`, the record of a
//! successful NL -> symbol mapping. The file is the source of record; the map
//! collection is rebuilt from these files.
//!
//! Format: a front-matter block of `key: <JSON value>` lines between `---`
//! lines (machine-readable, so [`parse`] can rebuild the [`Agreement`]), then a
//! human-readable body. The embedded text for map search is [`map_text`].

use crate::services::{Agreement, AgreementSymbol};

/// Renders an agreement as markdown.
#[must_use]
pub fn render(a: &Agreement) -> String {
    let j = |v: &str| serde_json::to_string(v).unwrap_or_default();
    let mut s = String::new();
    s.push_str("---\n");
    s.push_str(&format!("id: {}\n", j(&a.id)));
    s.push_str(&format!("nl_term: {}\n", j(&a.nl_term)));
    s.push_str(&format!("query: {}\n", j(&a.query)));
    s.push_str(&format!("intent: {}\n", j(&a.intent)));
    s.push_str(&format!("session: {}\n", j(&a.session_id)));
    s.push_str(&format!("created_at: {}\n", j(&a.created_at)));
    s.push_str(&format!("symbols: {}\n", serde_json::to_string(&a.symbols).unwrap_or_default()));
    s.push_str(&format!("files: {}\n", serde_json::to_string(&a.files).unwrap_or_default()));
    s.push_str(&format!("code_evidence: {}\n", serde_json::to_string(&a.code_evidence).unwrap_or_default()));
    s.push_str("---\n\n");
    let names: Vec<&str> = a.symbols.iter().map(|s| s.symbol.as_str()).collect();
    s.push_str(&format!("# \"{}\" -> {}\n\n", a.nl_term, names.join(", ")));
    s.push_str(&format!("Request ({}): {}\n\n", a.intent, a.query));
    s.push_str("## Symbols\n\n");
    for sym in &a.symbols {
        s.push_str(&format!("- `{}` (relevance {:.2}, {})", sym.symbol, sym.score, sym.method));
        if let Some(e) = &sym.code_evidence {
            s.push_str(&format!(": {e}"));
        }
        s.push('\n');
    }
    s.push_str("\n## Code evidence\n\n");
    for e in &a.code_evidence {
        s.push_str(&format!("- {e}\n"));
    }
    s.push_str("\n## Files\n\n");
    for f in &a.files {
        s.push_str(&format!("- `{f}`\n"));
    }
    s.push_str(&format!("\nSession `{}`, {}.\n", a.session_id, a.created_at));
    s
}

/// The text the map collection embeds for an agreement: the NL term, the
/// request and the split symbol names, so both the user's words and the code's
/// words find it.
#[must_use]
pub fn map_text(a: &Agreement) -> String {
    let names: Vec<String> = a.symbols.iter().map(|s| crate::relevance::split_symbol(&s.symbol)).collect();
    format!("{}\n{}\n{}", a.nl_term, a.query, names.join(", "))
}

/// Rebuilds an agreement from its markdown (the front matter).
///
/// # Errors
/// A message naming the missing or malformed key.
pub fn parse(markdown: &str, path: &str) -> Result<Agreement, String> {
    let mut lines = markdown.lines();
    if lines.next() != Some("---") {
        return Err(format!("{path}: no front matter (first line must be ---)"));
    }
    let mut fields = serde_json::Map::new();
    for line in lines {
        if line == "---" {
            break;
        }
        let Some((k, v)) = line.split_once(": ") else { continue };
        let value: serde_json::Value =
            serde_json::from_str(v).map_err(|e| format!("{path}: key {k}: not JSON ({e})"))?;
        fields.insert(k.to_string(), value);
    }
    let get_str = |k: &str| -> Result<String, String> {
        fields.get(k).and_then(serde_json::Value::as_str).map(str::to_string).ok_or_else(|| format!("{path}: missing {k}"))
    };
    let get_vec = |k: &str| -> Result<Vec<String>, String> {
        serde_json::from_value(fields.get(k).cloned().unwrap_or(serde_json::Value::Array(vec![])))
            .map_err(|e| format!("{path}: {k}: {e}"))
    };
    let symbols: Vec<AgreementSymbol> =
        serde_json::from_value(fields.get("symbols").cloned().unwrap_or(serde_json::Value::Array(vec![])))
            .map_err(|e| format!("{path}: symbols: {e}"))?;
    Ok(Agreement {
        id: get_str("id")?,
        nl_term: get_str("nl_term")?,
        query: get_str("query")?,
        intent: get_str("intent")?,
        session_id: get_str("session")?,
        created_at: get_str("created_at")?,
        symbols,
        files: get_vec("files")?,
        code_evidence: get_vec("code_evidence")?,
        path: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let a = Agreement {
            id: "agr-1".into(),
            nl_term: "ログイン機能".into(),
            query: "ログイン機能で\n空のパスワード: エラー".into(),
            intent: "MODIFY".into(),
            symbols: vec![AgreementSymbol {
                symbol: "AuthService".into(),
                score: 0.72,
                method: "lexical".into(),
                code_evidence: Some("AuthService.login() checks the password".into()),
            }],
            files: vec!["app/auth.py".into()],
            code_evidence: vec!["find_definitions: AuthService app/auth.py:3".into()],
            session_id: "ses-1".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            path: ".code-intel/agreements/agr-1.md".into(),
        };
        let md = render(&a);
        assert!(md.contains("# \"ログイン機能\" -> AuthService"));
        assert_eq!(parse(&md, &a.path).unwrap(), a);
        assert!(parse("# no front matter", "x.md").is_err());
        assert!(map_text(&a).contains("Auth Service"));
    }
}
