//! Uses the host's `syntax` import the way real plugins do (parse, query,
//! chunk per definition) and, for `*.probe` files, the way hostile ones might
//! (hoarding trees, huge queries, unknown languages, broken queries). Every
//! syntax error comes back as a plugin error carrying the host's message.

wit_bindgen::generate!({ world: "chunker", path: "../../../wit" });
include!("../../common.rs");

use code_intel::plugin::syntax::{self, SyntaxError};

struct Plugin;

fn error(e: SyntaxError) -> PluginError {
    let message = match e {
        SyntaxError::UnknownLanguage(m) => format!("unknown-language: {m}"),
        SyntaxError::InvalidQuery(m) => format!("invalid-query: {m}"),
        SyntaxError::ParseFailed(m) => format!("parse-failed: {m}"),
    };
    PluginError { message, line: None }
}

const PYTHON_DEFS: &str = "(function_definition name: (identifier) @name) @def (class_definition name: (identifier) @name) @def";
const PHP_DEFS: &str = "(function_definition name: (name) @name) @def (method_declaration name: (name) @name) @def (class_declaration name: (name) @name) @def";

fn definitions(file: &SourceFile, language: &str, query: &str) -> Result<ChunkOutcome, PluginError> {
    let tree = syntax::parse(language, &file.content).map_err(error)?;
    let has_errors = tree.has_errors();
    let mut chunks = Vec::new();
    for m in tree.query(query).map_err(error)? {
        let def = m.captures.iter().find(|c| c.name == "def");
        let name = m.captures.iter().find(|c| c.name == "name");
        let (Some(def), Some(name)) = (def, name) else { continue };
        let kind = if def.kind.starts_with("class") { "class" } else { "function" };
        chunks.push(Chunk {
            id: format!("{kind}:{}:{}", name.text, def.start_line),
            kind: kind.to_string(),
            name: name.text.clone(),
            qualified_name: None,
            parent: None,
            start_line: def.start_line,
            end_line: def.end_line,
            start_byte: def.start_byte,
            end_byte: def.end_byte,
            content: file.content[def.start_byte as usize..def.end_byte as usize].to_string(),
            signature: None,
            docstring: None,
            related_symbols: Vec::new(),
            references: Vec::new(),
            metadata: format!("{{\"has_errors\": {has_errors}, \"root\": \"{}\"}}", tree.root_kind()),
        });
    }
    Ok(ChunkOutcome::Chunks(chunks))
}

impl Guest for Plugin {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "probe".into(),
            version: "0.1.0".into(),
            description: format!("syntax import probe ({})", syntax::languages().join(", ")),
            languages: vec!["python".into(), "php".into()],
            file_patterns: vec!["**/*.py".into(), "**/*.php".into(), "**/*.probe".into()],
            priority: 10,
        }
    }

    fn chunk(file: SourceFile) -> Result<ChunkOutcome, PluginError> {
        let name = file.path.rsplit('/').next().unwrap_or_default();
        if file.path.ends_with(".py") {
            return definitions(&file, "python", PYTHON_DEFS);
        }
        if file.path.ends_with(".php") {
            return definitions(&file, "php", PHP_DEFS);
        }
        match name {
            "hoard.probe" => {
                let mut trees = Vec::new();
                for _ in 0..100 {
                    trees.push(syntax::parse("python", &file.content).map_err(error)?);
                }
                Ok(ChunkOutcome::Decline(format!("held {} trees", trees.len())))
            }
            "everything.probe" => {
                let tree = syntax::parse("python", &file.content).map_err(error)?;
                let matches = tree.query("(_) @node").map_err(error)?;
                Ok(ChunkOutcome::Decline(format!("{} matches", matches.len())))
            }
            "unknown-language.probe" => syntax::parse("cobol", &file.content).map(|_| ChunkOutcome::Decline("parsed?".into())).map_err(error),
            "bad-query.probe" => {
                let tree = syntax::parse("python", &file.content).map_err(error)?;
                tree.query("(function_definition").map(|_| ChunkOutcome::Decline("compiled?".into())).map_err(error)
            }
            _ => Ok(ChunkOutcome::Chunks(vec![whole_file(&file)])),
        }
    }
}

export!(Plugin);
