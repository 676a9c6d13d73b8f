//! One entry point for ranked chunk search: `lexical`, `semantic` or
//! `hybrid`, with the map-first short-circuit, filters before top-k and a
//! confidence floor.
//!
//! Each chunk gets a weighted sum (config `search_weights`,
//! default vector 0.4, keyword 0.5, definition 0.3, reference 0.1) over
//! candidates from both arms, keyed by chunk (one chunk = one span):
//! - vector: calibrated similarity of query and chunk (how far the cosine
//!   rises above the query's similarity to unrelated code, see
//!   [`crate::semantic::calibrate`]; 0 when the vector arm did not find the
//!   chunk);
//! - keyword: the chunk's BM25 relative to the best lexical hit;
//! - definition: the chunk defines what the query names (the identifier
//!   itself, or every word of the chunk's name appears in the query; for
//!   the file ranking, a name of two words or more whose words stand
//!   together in the request, see [`name_as_phrase`]);
//! - reference: how many other chunks mention the chunk's name (saturating
//!   at [`REFERENCE_SATURATION`]).
//!
//! That score orders chunks within a file; files are ordered by
//! [`crate::files`] (each arm's file ranking fused by reciprocal rank, with
//! the same weights, times the file's prior). Text the request quotes
//! (`'Invalid host header'`, 「Unavailable」) is searched as a phrase
//! ([`crate::quoted`]); the files holding it are one more ranking, weighted
//! like the keywords. The neighbouring words of an English request
//! ("trailing slash", "rate limit") are searched as pairs near each other
//! ([`crate::pairs`]); the files holding them are one more ranking, at
//! [`PAIRS_SHARE`] of the keyword weight.
//!
//! Every hit says which arms found it. Confidence is judged for the query:
//! it is confident when some hit's vector similarity reaches
//! [`VECTOR_CONFIDENCE_FLOOR`], some hit contains every query word or
//! defines the identifier searched for, a Japanese request names two or
//! more software words ([`crate::glossary`]) found by keyword, or (hybrid)
//! two thirds of its words, three at least, occur in the index and the
//! keywords found something; and not when
//! most of its words occur nowhere in the index and are no words of a
//! language either (gibberish: hashes, keyboard mashing; the vocabulary of
//! the model that embedded the request says what is a word), or a CJK
//! request has no word that is software
//! vocabulary (everyday words such as 時間 "time" aside) or in the index
//! (off-topic: weather, recipes, train timetables). Otherwise the
//! answer is "no confident match" and no hits, rather than random code.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use code_intel_core::config::SearchWeights;
use code_intel_store::Store;
use code_intel_store::tokenize::{query_words, split_identifier};

use crate::lexical::{LexicalHit, LexicalQuery};
use crate::links::{LinkedFile, MAX_LINKED_FILES, linked_files};
use crate::vocabulary::Vocabulary;
use serde::Serialize;

use crate::semantic::{
    Collection, Filters, ForestHit, MAP_HINT_SCORE, MAP_HINTS, MAP_SHORT_CIRCUIT_SCORE, MODEL_WAIT, MapHit, SearchError,
    VECTOR_CONFIDENCE_FLOOR, VectorSearch, VectorStatus,
};

/// Reference counts at or above this give the full reference signal: a
/// symbol used from 20 places is central; more says little more.
pub const REFERENCE_SATURATION: f64 = 20.0;

/// Candidates taken from each arm per requested result: fusion needs more
/// than the final `n` from each side to reorder well.
const CANDIDATES_PER_RESULT: usize = 5;

/// At least this many candidates per arm.
const MIN_CANDIDATES: usize = 50;

/// Most results a single search returns.
pub const MAX_RESULTS: usize = 100;

/// Ranking mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Lexical,
    Semantic,
    Hybrid,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "lexical" => Ok(Self::Lexical),
            "semantic" => Ok(Self::Semantic),
            "hybrid" => Ok(Self::Hybrid),
            other => Err(format!("unknown search mode \"{other}\" (lexical, semantic or hybrid)")),
        }
    }
}

/// A search request.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub query: String,
    /// `None`: hybrid when a model is available, else lexical.
    pub mode: Option<Mode>,
    pub collection: Collection,
    pub n_results: usize,
    pub filters: Filters,
    pub weights: SearchWeights,
    /// How long to wait for a loading model.
    pub model_wait: Duration,
    /// Linked files attached to each hit at most (0: none).
    pub links: usize,
}

impl SearchRequest {
    /// A request with defaults: auto mode and collection, 10 results.
    #[must_use]
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            mode: None,
            collection: Collection::Auto,
            n_results: 10,
            filters: Filters::default(),
            weights: SearchWeights::default(),
            model_wait: MODEL_WAIT,
            links: MAX_LINKED_FILES,
        }
    }
}

/// Which arm found a hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    Lexical,
    Vector,
}

/// One ranked chunk.
#[derive(Clone, Debug, Serialize)]
pub struct SearchHit {
    pub file: String,
    pub start_line: u32,
    pub end_line: u32,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    /// Final score (0-1 in hybrid and semantic mode).
    pub score: f64,
    pub arms: Vec<Arm>,
    /// Calibrated similarity to the query, when the vector arm found the chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_score: Option<f32>,
    /// Keyword (BM25) score, when the lexical arm found the chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword_score: Option<f64>,
    /// Rank of the hit's file among the files of the answer (1 = best); a
    /// file's best chunks follow one another (see [`crate::files`]).
    pub file_rank: usize,
    /// Files tied to the hit by cross-file links, strongest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked_files: Vec<LinkedFile>,
    #[serde(skip)]
    pub rowid: i64,
    #[serde(skip)]
    confident: bool,
    /// The chunk defines what the query names.
    #[serde(skip)]
    defines: bool,
    /// The chunk holds every word of the query (or is the identifier
    /// searched for): then each word is known to the index.
    #[serde(skip)]
    every_word: bool,
    /// BM25 of the chunk for a phrase quoted in the request
    /// ([`crate::quoted`]), when it holds one.
    #[serde(skip)]
    quoted: Option<f64>,
    /// What the vector arm's file ranking goes by: the calibrated
    /// similarity less the chunk's hubness ([`ForestHit::ranking`]).
    #[serde(skip)]
    vector_rank: Option<f32>,
    /// The same for the request read in English ([`translated_query`]),
    /// when that search found the chunk.
    #[serde(skip)]
    translated_rank: Option<f32>,
    /// BM25 of the chunk for the request's neighbouring words searched as
    /// pairs ([`crate::pairs`]), when it holds one.
    #[serde(skip)]
    paired: Option<f64>,
}

/// The answer.
#[derive(Clone, Debug, Serialize)]
pub struct SearchResponse {
    pub query: String,
    /// The mode actually used (semantic degrades to lexical without a model).
    pub mode: Mode,
    /// `ready`, `partial: N%`, `initializing`, `unavailable: <reason>`.
    pub vector_search: String,
    /// The model whose vectors ranked the forest (`name@revision`): the
    /// English model for a request in English when it is ready, else the
    /// main one; `None` when no vectors took part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_model: Option<String>,
    /// A request in Japanese read in English ([`translated_query`]): the
    /// words the forest was also searched with, beside the request as
    /// written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub english_query: Option<String>,
    /// A map hit answered the query; the forest was not searched.
    pub short_circuit: bool,
    pub hits: Vec<SearchHit>,
    /// With `short_circuit`: the answer. Otherwise: hints from past sessions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub map_hits: Vec<MapHit>,
    pub no_confident_match: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Runs a search. `vectors` is `None` when the caller has no vector context
/// (then only lexical search is possible and the response says why).
///
/// # Errors
/// Empty query, invalid filters, SQLite errors, inference failure.
pub fn search(store: &Store, vectors: Option<&VectorSearch>, request: &SearchRequest) -> Result<SearchResponse, SearchError> {
    let query = request.query.trim();
    if query.is_empty() {
        return Err(SearchError::BadFilter("query is empty: give words or an identifier to search for".to_string()));
    }
    let n = request.n_results.clamp(1, MAX_RESULTS);
    // Validate the glob before any work.
    let _ = request.filters.path_matcher()?;
    let candidates = (n * CANDIDATES_PER_RESULT).max(MIN_CANDIDATES);

    let wants_vectors = request.mode != Some(Mode::Lexical) || request.collection == Collection::Map;
    let status = match vectors {
        None => VectorStatus::Unavailable("no vector index in this context".to_string()),
        Some(v) if wants_vectors => v.status(store, request.model_wait)?,
        Some(v) => v.status(store, Duration::ZERO)?,
    };
    let encoder = match (vectors, status.usable() && wants_vectors) {
        (Some(v), true) => v.encoder(Duration::ZERO).0,
        _ => None,
    };
    let mode = match (request.mode, &encoder) {
        (Some(Mode::Lexical), _) | (_, None) => Mode::Lexical,
        (Some(m), Some(_)) => m,
        (None, Some(_)) => Mode::Hybrid,
    };
    let mut response = SearchResponse {
        query: query.to_string(),
        mode,
        vector_search: status.to_string(),
        vector_model: None,
        english_query: None,
        short_circuit: false,
        hits: Vec::new(),
        map_hits: Vec::new(),
        no_confident_match: false,
        message: None,
    };
    if encoder.is_none() && request.mode.is_some_and(|m| m != Mode::Lexical) {
        response.message = Some(format!("vector search is {status}; answered with lexical search. {}", status_hint(&status)));
    }

    let mut vector_hits: Vec<ForestHit> = Vec::new();
    // The request reads as everyday talk, not about software (judged by
    // meaning when there is a model, see `crate::topic`).
    let mut everyday = false;
    // The vocabulary of the model that embedded the request tells a word of
    // a language the repository does not use from no word at all.
    let mut dictionary: Option<Arc<code_intel_embed::Encoder>> = None;
    // The lexical arm, when the mode has one: in hybrid mode it runs on this
    // thread while the query is embedded on another (the store stays here).
    let wants_lexical = mode != Mode::Semantic && request.collection != Collection::Map;
    let mut lexical: Option<Vec<LexicalHit>> = None;
    // The chunks holding the request's word pairs: in hybrid mode read
    // beside the embedding too.
    let mut paired: Option<Vec<LexicalHit>> = None;
    let terms = if wants_lexical { english_terms(store, query)? } else { Vec::new() };
    // A Japanese request also searches the forest in the English it is
    // written about (hybrid mode: the ranking fuses both).
    let translated = if mode == Mode::Hybrid && request.collection != Collection::Map { translated_query(query, &terms) } else { None };
    let mut translated_hits: Vec<ForestHit> = Vec::new();
    let mut reading_failed: Option<String> = None;
    if let (Some(encoder), Some(v)) = (&encoder, vectors) {
        // The forest is searched with the English model's vectors when the
        // request is in English and that model is ready (`for_query`); the
        // map, with the main model's, which embeds the agreements.
        let side = if request.collection == Collection::Map { v } else { v.for_query(store, query, request.model_wait)? };
        let same = std::ptr::eq(side, v);
        let side_encoder = if same { Some(Arc::clone(encoder)) } else { side.encoder(Duration::ZERO).0 };
        let Some(side_encoder) = side_encoder else {
            return Err(SearchError::Embed("the English model went away during the request".to_string()));
        };
        let wants_map = request.collection != Collection::Forest && (same || store.has_map_entries()?);
        // The forest is searched on the embedding's thread, right after it,
        // while the keyword arm reads the store on this one: what the search
        // needs from the store is read first.
        let forest_plan = if mode != Mode::Lexical && request.collection != Collection::Map {
            side.prepare_forest(store, &side_encoder, &request.filters)?
        } else {
            None
        };
        // The English reading's side (the English model when it is ready,
        // never waited for) and what its forest search needs from the
        // store: the request's own plan when that is the same side. The
        // reading only adds to the answer: when it fails, the answer says
        // so and goes on without it.
        let english = match &translated {
            Some(text) => {
                let prepared = (|| -> Result<_, SearchError> {
                    let english_side = v.for_query(store, text, Duration::ZERO)?;
                    if std::ptr::eq(english_side, side) {
                        return Ok(Some((text.as_str(), side, Arc::clone(&side_encoder), None)));
                    }
                    let Some(e) = english_side.encoder(Duration::ZERO).0 else { return Ok(None) };
                    Ok(english_side.prepare_forest(store, &e, &request.filters)?.map(|plan| (text.as_str(), english_side, e, Some(plan))))
                })();
                prepared.unwrap_or_else(|e| {
                    reading_failed = Some(e.to_string());
                    None
                })
            }
            None => None,
        };
        let embed_and_search = || -> Result<(Vec<f32>, crate::semantic::ForestCandidates), SearchError> {
            let qv = VectorSearch::embed_query(&side_encoder, query)?;
            let found = forest_plan.as_ref().map(|plan| side.forest_candidates(&qv, candidates, plan)).unwrap_or_default();
            Ok((qv, found))
        };
        let embed_and_search_english = || -> Result<Option<(Vec<f32>, crate::semantic::ForestCandidates)>, SearchError> {
            let Some((text, english_side, e, own_plan)) = &english else { return Ok(None) };
            let Some(plan) = own_plan.as_ref().or(forest_plan.as_ref()) else { return Ok(None) };
            let ev = VectorSearch::embed_query(e, text)?;
            let found = english_side.forest_candidates(&ev, candidates, plan);
            Ok(Some((ev, found)))
        };
        let panicked = || SearchError::Embed("the embedding thread panicked".to_string());
        // Each embedding on a thread of its own, the keyword arm on this one.
        let (embedded, english_embedded, lex, pairs) = std::thread::scope(|s| {
            let embedding = s.spawn(embed_and_search);
            let english_embedding = english.is_some().then(|| s.spawn(embed_and_search_english));
            let lex = wants_lexical.then(|| lexical_hits(store, query, &terms, &request.filters, candidates));
            let pairs = wants_lexical.then(|| paired_hits(store, query, &request.filters, candidates));
            let embedded = embedding.join().unwrap_or_else(|_| Err(panicked()));
            let english_embedded = english_embedding.map_or(Ok(None), |t| t.join().unwrap_or_else(|_| Err(panicked())));
            (embedded, english_embedded, lex, pairs)
        });
        if let Some(lex) = lex {
            lexical = Some(lex?);
        }
        if let Some(pairs) = pairs {
            paired = Some(pairs?);
        }
        let (qv, forest_candidates) = embedded?;
        let english_candidates = english_embedded.unwrap_or_else(|e| {
            reading_failed = Some(e.to_string());
            None
        });
        let baselines = side.baselines(&side_encoder, &qv)?;
        everyday = baselines.everyday;
        // A remote encoder has no vocabulary here: then the other model's.
        dictionary = [&side_encoder, encoder].into_iter().find(|e| e.is_whole_word("the").is_some()).map(Arc::clone);
        // The English model judges the topic less surely than the main
        // model: when it leans to everyday talk without saying so, the main
        // model is asked too (either verdict of everyday talk stands).
        let mut main_query = None;
        if !same && !everyday && baselines.everyday_votes >= crate::topic::SECOND_OPINION_VOTES {
            let mq = VectorSearch::embed_query(encoder, query)?;
            everyday = v.baselines(encoder, &mq)?.everyday;
            main_query = Some(mq);
        }
        if wants_map {
            let map_query = match main_query {
                Some(mq) => Some(mq),
                None if same => None,
                None => Some(VectorSearch::embed_query(encoder, query)?),
            };
            let (map_qv, map_baseline) = match &map_query {
                None => (&qv, baselines.map),
                Some(mq) => (mq, v.baselines(encoder, mq)?.map),
            };
            let map_hits = v.search_map(store, encoder, map_qv, map_baseline, n.max(MAP_HINTS))?;
            match request.collection {
                Collection::Map => {
                    response.map_hits = map_hits.into_iter().filter(|h| h.score >= VECTOR_CONFIDENCE_FLOOR).take(n).collect();
                    response.no_confident_match = response.map_hits.is_empty();
                    if response.no_confident_match {
                        response.message = Some("no confident match in the map (no agreement is about this)".to_string());
                    }
                    return Ok(response);
                }
                _ if map_hits.first().is_some_and(|h| h.score >= MAP_SHORT_CIRCUIT_SCORE) => {
                    response.short_circuit = true;
                    response.map_hits = map_hits.into_iter().filter(|h| h.score >= MAP_SHORT_CIRCUIT_SCORE).take(n).collect();
                    response.message = Some(format!(
                        "answered from the map (an agreement scored >= {MAP_SHORT_CIRCUIT_SCORE}); verify its symbols with find_definitions"
                    ));
                    return Ok(response);
                }
                _ => response.map_hits = map_hits.into_iter().filter(|h| h.score >= MAP_HINT_SCORE).take(MAP_HINTS).collect(),
            }
        }
        if mode != Mode::Lexical {
            response.vector_model = Some(side_encoder.info().key.to_string());
            vector_hits = side.forest_hits(store, forest_candidates, baselines.forest, candidates)?;
        }
        if let (Some((text, english_side, e, _)), Some((ev, found))) = (&english, english_candidates) {
            match english_side.baselines(e, &ev).and_then(|b| english_side.forest_hits(store, found, b.forest, candidates)) {
                Ok(hits) => {
                    translated_hits = hits;
                    response.english_query = Some((*text).to_string());
                }
                Err(e) => reading_failed = Some(e.to_string()),
            }
        }
        if let Some(why) = reading_failed {
            response.message.get_or_insert_with(|| format!("the request was not also searched read in English: {why}"));
        }
    } else if request.collection == Collection::Map {
        response.no_confident_match = true;
        response.message = Some(format!("the map needs vector search, which is {status}. {}", status_hint(&status)));
        return Ok(response);
    }

    let lexical = match lexical {
        Some(hits) => hits,
        None if mode == Mode::Semantic => Vec::new(),
        None => lexical_hits(store, query, &terms, &request.filters, candidates)?,
    };
    let mut hits = match mode {
        Mode::Lexical => lexical_only(lexical),
        Mode::Semantic => vector_hits.into_iter().map(|h| vector_only(h)).collect(),
        Mode::Hybrid => {
            let called = called_chunks(store, query, &request.filters)?;
            fuse(store, query, vector_hits, translated_hits, lexical, &called, &request.weights, n)?
        }
    };
    if wants_lexical {
        add_quoted(store, query, &request.filters, candidates, &mut hits)?;
        let found = match paired.take() {
            Some(found) => found,
            None => paired_hits(store, query, &request.filters, candidates)?,
        };
        add_paired(found, &mut hits);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.file.cmp(&b.file)).then(a.start_line.cmp(&b.start_line)));
    // Confidence is judged for the query, not per hit: once some hit is
    // confident (or a Japanese request names enough software vocabulary
    // found by keyword), every hit takes part in the file ranking, where weak
    // evidence ranks low. Unknown strings that are no words are gibberish
    // (hashes, keyboard mashing) whatever the vectors say.
    let best_vector = hits.iter().filter_map(|h| h.vector_score).fold(0.0f32, f32::max);
    // A chunk holding every word settles that the words are known: no
    // probes then (one full-text lookup per word). Vector similarity never
    // settles it: a hash or keyboard mashing can come as close to some
    // chunk as a real request (see `crate::topic`).
    let every_word = hits.iter().any(|h| h.every_word);
    let vocabulary = if mode != Mode::Lexical && !every_word { Some(index_vocabulary(store, query, dictionary.as_deref())?) } else { None };
    let gibberish = vocabulary.as_ref().is_some_and(Vocabulary::off_topic);
    let found_by_keyword = hits.iter().any(|h| h.keyword_score.is_some());
    let glossary_confident = mode != Mode::Semantic && crate::glossary::matched_terms(query) >= 2 && found_by_keyword;
    // A request in the repository's own words is about it, even when no
    // chunk holds every word and none is close enough in meaning (a long
    // bug report).
    let familiar = mode == Mode::Hybrid && found_by_keyword && vocabulary.as_ref().is_some_and(Vocabulary::familiar);
    // Everyday talk ("how many moons does Jupiter have") is answered only
    // where the repository speaks its language: a chunk holding every word,
    // a definition of what it names, a phrase it quotes, its content words
    // in the index ("many" and "have" are in every repository; "moons" and
    // "Jupiter" are not), two of them in one chunk (a repository with
    // pages of prose in many languages knows "cat" and "eating", but not
    // together).
    let everyday = everyday && !every_word && !hits.iter().any(|h| h.defines || h.quoted.is_some());
    let everyday = everyday
        && !match &vocabulary {
            Some(v) if v.speaks() => v.cjk || index_knows_together(store, &v.content_known_words)?,
            _ => false,
        };
    let any_confident = !gibberish && !everyday && (hits.iter().any(|h| h.confident) || glossary_confident || familiar);
    if any_confident {
        let mut hits = by_file(hits, query, &request.weights);
        hits.truncate(n);
        if request.links > 0 {
            let linked = store.paths_with_links(&hits.iter().map(|h| h.file.as_str()).collect::<Vec<_>>())?;
            for hit in hits.iter_mut().filter(|h| linked.contains(&h.file)) {
                hit.linked_files = linked_files(store, &hit.file, hit.rowid, request.links)?;
            }
        }
        response.hits = hits;
    } else {
        response.no_confident_match = true;
        let best = hits.first().and_then(|h| h.vector_score);
        response.message = Some(match best {
            _ if everyday => "no confident match: the request reads as everyday language rather than about software, and this repository does not use its words; say it in the code's terms, name an identifier, or use search_text".to_string(),
            _ if gibberish => format!(
                "no confident match: most of the query's words are unknown to this repository and are no words the model knows either (best similarity {best_vector:.2}); check the spelling, or try other words, an identifier, or search_text"
            ),
            Some(s) => format!(
                "no confident match: the closest chunk scored {s:.2}, below the confidence floor {VECTOR_CONFIDENCE_FLOOR}; try other words or search_text"
            ),
            None => "no confident match: no chunk contains these words; try other words, an identifier, or search_text".to_string(),
        });
    }
    Ok(response)
}

/// Orders the hits of a confident query by file (see [`crate::files`]): each
/// arm's file ranking (keyword scores, vector scores, definitions of what the
/// query names) fused by reciprocal rank with the configured weights, times
/// the file's prior; each file's best chunks in turn.
///
/// The chunks' weighted sums are not a fourth ranking: they are mostly the
/// vector arm again (a chunk both arms found outscores one only the keywords
/// found, however weak its similarity), and dropping them, with keyword and
/// vector weighted alike, measured better on every repository of
/// `bench/retrieval` but starlette (R@5 0.55 -> 0.62 on pelican, 0.53 -> 0.60
/// on koel, 0.93 -> 0.85 on starlette).
fn by_file(hits: Vec<SearchHit>, query: &str, weights: &SearchWeights) -> Vec<SearchHit> {
    use crate::files::{CHUNKS_PER_FILE, file_prior, fuse_ranks, rank_files};
    let lexical = rank_files(hits.iter().filter_map(|h| h.keyword_score.map(|s| (h.file.as_str(), s))));
    let vector = rank_files(hits.iter().filter_map(|h| h.vector_rank.map(|s| (h.file.as_str(), f64::from(s)))));
    let translated = rank_files(hits.iter().filter_map(|h| h.translated_rank.map(|s| (h.file.as_str(), f64::from(s)))));
    let defines = rank_files(hits.iter().filter(|h| h.defines).map(|h| (h.file.as_str(), h.score)));
    let quoted = rank_files(hits.iter().filter_map(|h| h.quoted.map(|s| (h.file.as_str(), s))));
    let paired = rank_files(hits.iter().filter_map(|h| h.paired.map(|s| (h.file.as_str(), s))));
    let mut fused = fuse_ranks(&[
        (&lexical, weights.keyword),
        (&vector, weights.vector),
        (&translated, weights.vector * TRANSLATED_SHARE),
        (&defines, weights.definition),
        (&quoted, weights.keyword),
        (&paired, weights.keyword * PAIRS_SHARE),
    ]);
    let query_lower = query.to_lowercase();
    for (file, score) in &mut fused {
        *score *= file_prior(file, &query_lower);
    }
    let mut by_file: HashMap<String, Vec<SearchHit>> = HashMap::new();
    for hit in hits {
        by_file.entry(hit.file.clone()).or_default().push(hit);
    }
    let mut files: Vec<(f64, Vec<SearchHit>)> =
        by_file.into_iter().map(|(file, chunks)| (fused.get(&file).copied().unwrap_or(0.0), chunks)).collect();
    files.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1[0].file.cmp(&b.1[0].file)));
    let mut out = Vec::new();
    for (rank, (_, mut chunks)) in files.into_iter().enumerate() {
        chunks.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.start_line.cmp(&b.start_line)));
        for mut hit in chunks.into_iter().take(CHUNKS_PER_FILE) {
            hit.file_rank = rank + 1;
            out.push(hit);
        }
    }
    out
}

/// The query's [`Vocabulary`] against the index (a word is known when
/// some chunk matches it, by itself or by its stem).
fn index_vocabulary(store: &Store, query: &str, dictionary: Option<&code_intel_embed::Encoder>) -> Result<Vocabulary, SearchError> {
    crate::vocabulary::vocabulary(query, dictionary, |word| match code_intel_store::tokenize::match_expression(word, false) {
        Some(expression) => Ok(store.any_match(&expression)?),
        None => Ok(false),
    })
}

/// Does some chunk of the index hold two of `words` together
/// ([`crate::vocabulary::known_together`])?
fn index_knows_together(store: &Store, words: &[String]) -> Result<bool, SearchError> {
    crate::vocabulary::known_together(words, |a, b| match code_intel_store::tokenize::match_expression(&format!("{a} {b}"), false) {
        Some(expression) => Ok(store.any_match(&expression)?),
        None => Ok(false),
    })
}

fn status_hint(status: &VectorStatus) -> String {
    match status {
        VectorStatus::Initializing => "The model is loading; retry in a few seconds.".to_string(),
        VectorStatus::Unavailable(_) => code_intel_embed::install_hint(),
        _ => String::new(),
    }
}

fn vector_only(h: ForestHit) -> SearchHit {
    SearchHit {
        file: h.path,
        start_line: h.start_line,
        end_line: h.end_line,
        kind: h.kind,
        name: h.name,
        qualified_name: h.qualified_name,
        score: f64::from(h.score),
        arms: vec![Arm::Vector],
        vector_score: Some(h.score),
        vector_rank: Some(h.ranking),
        translated_rank: None,
        paired: None,
        keyword_score: None,
        file_rank: 0,
        linked_files: Vec::new(),
        rowid: h.rowid,
        confident: h.score >= VECTOR_CONFIDENCE_FLOOR,
        defines: false,
        every_word: false,
        quoted: None,
    }
}

/// The chunks holding a pair of the request's neighbouring words
/// ([`crate::pairs`]), best by BM25; none for a request without pairs. In
/// hybrid mode it runs beside the embedding, after the keyword arm: at
/// 100,000 chunks it reads the positions of every chunk holding both words
/// of a pair (hybrid p50 12.0 -> 21.3-23.9 ms run after the embedding,
/// 18.3-19.2 ms beside it; bench/README.md).
fn paired_hits(store: &Store, query: &str, filters: &Filters, limit: usize) -> Result<Vec<LexicalHit>, SearchError> {
    let Some(expression) = crate::pairs::expression(query) else { return Ok(Vec::new()) };
    let q = LexicalQuery { text: query, path_glob: filters.path_glob.as_deref(), kinds: filters.kinds.clone(), limit };
    crate::lexical::expression_hits(store, &expression, &q).map_err(lexical_error)
}

/// Marks the hits holding a pair of the request's neighbouring words
/// (`found`, from [`paired_hits`]) and adds the chunks holding one that no
/// arm found; pairs make no request confident.
fn add_paired(found: Vec<LexicalHit>, hits: &mut Vec<SearchHit>) {
    for h in found {
        let score = h.score;
        match hits.iter_mut().find(|hit| hit.rowid == h.chunk_rowid) {
            Some(hit) => hit.paired = Some(score),
            None => {
                let mut hit = lexical_hit(h);
                hit.keyword_score = None;
                hit.score = 0.0;
                hit.defines = false;
                hit.every_word = false;
                hit.confident = false;
                hit.paired = Some(score);
                hits.push(hit);
            }
        }
    }
}

/// Marks the hits that hold a phrase quoted in the request
/// ([`crate::quoted`]) and adds the chunks holding one that neither arm
/// found. Such a chunk is confident: the request names its text.
fn add_quoted(store: &Store, query: &str, filters: &Filters, limit: usize, hits: &mut Vec<SearchHit>) -> Result<(), SearchError> {
    for phrase in crate::quoted::phrases(query) {
        let Some(expression) = crate::quoted::expression(phrase) else { continue };
        let q = LexicalQuery { text: phrase, path_glob: filters.path_glob.as_deref(), kinds: filters.kinds.clone(), limit };
        let found = crate::lexical::expression_hits(store, &expression, &q).map_err(lexical_error)?;
        for h in found {
            let score = h.score;
            match hits.iter_mut().find(|hit| hit.rowid == h.chunk_rowid) {
                Some(hit) => {
                    hit.quoted = Some(hit.quoted.unwrap_or(0.0).max(score));
                    hit.confident = true;
                }
                None => {
                    let mut hit = lexical_hit(h);
                    hit.keyword_score = None;
                    hit.score = 0.0;
                    hit.defines = false;
                    hit.every_word = false;
                    hit.quoted = Some(score);
                    hit.confident = true;
                    hits.push(hit);
                }
            }
        }
    }
    Ok(())
}

/// [`english_terms_with`] the index's name words (read only for a request
/// with katakana).
fn english_terms(store: &Store, query: &str) -> Result<Vec<String>, SearchError> {
    let names: Arc<[String]> = if crate::loanwords::has_katakana(query) { store.name_words()? } else { Vec::new().into() };
    Ok(english_terms_with(query, &names))
}

/// The English words a request in Japanese is written about: those of its
/// software vocabulary (see [`crate::glossary`]) and those its katakana
/// words read as among `names`, the words the searched repositories name
/// things with (see [`crate::loanwords`]), without repeats; none for a
/// request in English. The keyword arm asks for them beside the request's
/// own words, and the vector arm also searches with them as an English
/// query ([`translated_query`]), here and organisation-wide.
#[must_use]
pub fn english_terms_with(query: &str, names: &[String]) -> Vec<String> {
    let mut terms: Vec<String> = crate::glossary::english_terms(query).into_iter().map(str::to_string).collect();
    for word in crate::loanwords::english_words(query, names) {
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    terms
}

/// What the file ranking of a request read in English ([`translated_query`])
/// weighs, as a share of the vector arm's weight. It adds to the request as
/// written, whose meaning the glossary's words do not carry ("fails", "only
/// the first", "instead of"). On the 85 Japanese requests of
/// `bench/retrieval`, with the English model: alone it ranks better than the
/// request as written (semantic R@5 0.64 vs 0.51), but in its place in the
/// fusion it lost (hybrid MRR 0.59 -> 0.53); beside it at 0.3, 0.5, 0.7 and
/// 1 of the vector weight, hybrid MRR 0.597, 0.612, 0.593, 0.583 and R@5
/// 0.788, 0.800, 0.812, 0.812 (0.591 / 0.776 without it).
pub const TRANSLATED_SHARE: f64 = 0.5;

/// What the file ranking of the request's neighbouring words searched as
/// pairs ([`crate::pairs`]) weighs, as a share of the keyword weight. On
/// the 161 English requests of `bench/retrieval`, hybrid R@1 / R@5 / MRR
/// without it 0.516 / 0.863 / 0.643; at 0.15, 0.25, 0.35, 0.5 and 1:
/// 0.522 / 0.876 / 0.655, 0.516 / 0.882 / 0.658, 0.497 / 0.882 / 0.651,
/// 0.497 / 0.882 / 0.651, 0.503 / 0.857 / 0.650 (bench/README.md).
pub const PAIRS_SHARE: f64 = 0.25;

/// Fewest [`english_terms`] a request is searched by as an English query.
const MIN_TRANSLATED_TERMS: usize = 2;

/// A request in Japanese as the English query of its [`english_terms`], when
/// it has enough of them. Code is written in English: a multilingual model
/// brings a Japanese request only part of the way to it, and the words it
/// is about, said in English, come nearer the code that does it.
#[must_use]
pub fn translated_query(query: &str, terms: &[String]) -> Option<String> {
    (!crate::semantic::is_english(query) && terms.len() >= MIN_TRANSLATED_TERMS).then(|| terms.join(" "))
}

/// The lexical arm: [`crate::lexical::search`] (all words ANDed, then
/// any-word matches), filters applied before the cut.
/// `terms` are the request's [`english_terms`], also asked for.
fn lexical_hits(store: &Store, query: &str, terms: &[String], filters: &Filters, limit: usize) -> Result<Vec<LexicalHit>, SearchError> {
    let text = if terms.is_empty() { query.to_string() } else { format!("{query} {}", terms.join(" ")) };
    let q = LexicalQuery {
        text: &text,
        path_glob: filters.path_glob.as_deref(),
        kinds: filters.kinds.clone(),
        limit,
    };
    crate::lexical::search(store, &q).map_err(lexical_error)
}

/// A lexical failure as a search error: the store's own, or a bad filter.
fn lexical_error(e: crate::lexical::LexicalError) -> SearchError {
    match e {
        crate::lexical::LexicalError::Store(e) => SearchError::Store(e),
        other => SearchError::BadFilter(other.to_string()),
    }
}

/// Lexical-mode hits: scores relative to the best. Hits containing every
/// word (or naming the identifier) are confident; any-word matches only
/// when nothing matches every word (lexical mode has no similarity to judge
/// them by).
fn lexical_only(hits: Vec<LexicalHit>) -> Vec<SearchHit> {
    let best = hits.iter().map(|h| h.score).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let only_partial = !hits.iter().any(|h| h.all_words || h.exact);
    hits.into_iter()
        .map(|h| {
            let confident = h.all_words || h.exact || only_partial;
            let mut hit = lexical_hit(h);
            hit.score = hit.keyword_score.unwrap_or(0.0) / best;
            hit.confident = confident;
            hit
        })
        .collect()
}

fn lexical_hit(h: LexicalHit) -> SearchHit {
    SearchHit {
        file: h.path,
        start_line: h.start_line,
        end_line: h.end_line,
        kind: h.kind,
        name: h.name,
        qualified_name: h.qualified_name,
        score: h.score,
        arms: vec![Arm::Lexical],
        vector_score: None,
        keyword_score: Some(h.score),
        file_rank: 0,
        linked_files: Vec::new(),
        rowid: h.chunk_rowid,
        confident: h.all_words || h.exact,
        defines: h.exact,
        every_word: h.all_words || h.exact,
        quoted: None,
        vector_rank: None,
        translated_rank: None,
        paired: None,
    }
}

/// Words of the query, lower-cased, identifiers split too.
#[must_use]
pub fn query_terms(query: &str) -> std::collections::HashSet<String> {
    let mut terms = std::collections::HashSet::new();
    for word in query_words(query) {
        terms.insert(word.to_lowercase());
        for part in split_identifier(word) {
            terms.insert(part.to_lowercase());
        }
    }
    terms
}

/// The query's words in order ([`query_words`]: stop words left out),
/// lower-cased, identifiers split into their words.
#[must_use]
pub fn query_sequence(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in query_words(query) {
        let parts = split_identifier(word);
        if parts.len() > 1 {
            out.extend(parts.iter().map(|p| p.to_lowercase()));
        } else {
            out.push(word.to_lowercase());
        }
    }
    out
}

/// Does the chunk's name appear in the query as a phrase: its words next to
/// one another, in either order, a plural `s` aside (`transferServer` in
/// "the server transfer dialog", not in "a server that is in a transfer")?
/// A long request holds many words, and a name made of two of them far apart
/// (`test_app` in "our test suite runs the app's lifecycle") says nothing of
/// what it asks for. A name that starts with a common verb of method and
/// page names ([`NAME_VERBS`]: `getLyrics`, `ListProducts`) is named only in
/// its own order: "lyrics get read" does not name `getLyrics`, and "the
/// products list" names the list of products, not necessarily the page
/// class `ListProducts` (in Filament v4 its table is configured elsewhere).
#[must_use]
pub fn name_as_phrase(name: &str, sequence: &[String]) -> bool {
    let parts: Vec<String> = split_identifier(name).iter().map(|p| p.to_lowercase()).filter(|p| p.len() > 1).collect();
    if parts.is_empty() {
        return false;
    }
    if NAME_VERBS.contains(&parts[0].as_str()) {
        return sequence.windows(parts.len()).any(|w| parts.iter().zip(w).all(|(p, q)| same_word(q, p)));
    }
    sequence.windows(parts.len()).any(|w| parts.iter().all(|p| w.iter().any(|q| same_word(q, p))))
}

/// Verbs that start method and page names and follow their object in
/// English ("lyrics get read", "the orders list", "the user edit page"):
/// a name starting with one is named by a request only in its own order.
/// (`is`, `can` and the like are stop words, never in the sequence.)
const NAME_VERBS: &[&str] = &[
    "get", "set", "has", "make", "use", "create", "update", "delete", "remove", "add", "find", "load",
    "save", "read", "write", "handle", "run", "send", "fetch", "render", "parse", "check", "show", "list", "edit",
    "view", "store", "build",
];

/// The same word, a plural `s` aside (`order`, `orders`).
fn same_word(a: &str, b: &str) -> bool {
    a == b || b.strip_suffix('s') == Some(a) || a.strip_suffix('s') == Some(b)
}

/// The words of an alias, lower-cased; none for an alias of one word, which
/// a long request would say by chance (`orders`).
fn alias_words(alias: &str) -> Vec<String> {
    let parts: Vec<String> = alias.split_whitespace().map(str::to_lowercase).collect();
    if parts.len() < 2 { Vec::new() } else { parts }
}

/// Does the request say this alias of a chunk (`orders list`): its words
/// next to one another, stop words aside, in either order, a plural `s`
/// aside ("in the order list", "the list of orders")? An alias of one word
/// is never said.
#[must_use]
pub fn alias_in_query(alias: &str, sequence: &[String]) -> bool {
    let parts = alias_words(alias);
    !parts.is_empty() && sequence.windows(parts.len()).any(|w| parts.iter().all(|p| w.iter().any(|q| same_word(q, p))))
}

/// [`alias_in_query`] for a run of Japanese vocabulary terms, each a list
/// of English alternatives: the alias's words, one per term, next to one
/// another in either order.
#[must_use]
pub fn alias_in_terms<T: AsRef<str>, A: AsRef<[T]>>(alias: &str, run: &[A]) -> bool {
    let parts = alias_words(alias);
    let said = |p: &String, alts: &A| alts.as_ref().iter().any(|q| same_word(q.as_ref(), p));
    !parts.is_empty()
        && run.windows(parts.len()).any(|w| parts.iter().zip(w).all(|(p, a)| said(p, a)) || parts.iter().rev().zip(w).all(|(p, a)| said(p, a)))
}

/// Does the chunk's name consist of query words (`compute_order_total` for
/// "how is the order total computed" does not; for "compute order total" it does)?
#[must_use]
pub fn name_in_query(name: &str, terms: &std::collections::HashSet<String>) -> bool {
    let parts: Vec<String> = split_identifier(name).iter().map(|p| p.to_lowercase()).filter(|p| p.len() > 1).collect();
    !parts.is_empty() && parts.iter().all(|p| terms.contains(p))
}

/// The chunks the request calls by one of their aliases ("the orders list":
/// [`code_intel_store::Store::aliases`], [`alias_in_query`]) that the
/// filters let through.
fn called_chunks(store: &Store, query: &str, filters: &Filters) -> Result<Vec<code_intel_store::aliases::ChunkAlias>, SearchError> {
    let aliases = store.aliases()?;
    if aliases.is_empty() {
        return Ok(Vec::new());
    }
    let sequence = query_sequence(query);
    // A Japanese request says an alias in its own words: 「注文一覧」 is
    // "orders list", 「ボード一覧」 "boards list" where the repository
    // names boards ([`crate::glossary::term_runs_with`]).
    let names: std::sync::Arc<[String]> = if crate::loanwords::has_katakana(query) { store.name_words()? } else { Vec::new().into() };
    let runs = crate::glossary::term_runs_with(query, &names);
    let accept = filters.path_matcher()?;
    Ok(aliases
        .iter()
        .filter(|a| alias_in_query(&a.alias, &sequence) || runs.iter().any(|run| alias_in_terms(&a.alias, run)))
        .filter(|a| accept(&a.path) && (filters.kinds.is_empty() || filters.kinds.contains(&a.kind)))
        .cloned()
        .collect())
}

fn fuse(
    store: &Store,
    query: &str,
    vector_hits: Vec<ForestHit>,
    translated_hits: Vec<ForestHit>,
    lexical: Vec<LexicalHit>,
    called: &[code_intel_store::aliases::ChunkAlias],
    weights: &SearchWeights,
    n: usize,
) -> Result<Vec<SearchHit>, SearchError> {
    let terms = query_terms(query);
    let sequence = query_sequence(query);
    let best_kw = lexical.iter().map(|h| h.score).fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
    let mut by_chunk: HashMap<i64, SearchHit> = HashMap::new();
    let mut exact_def: HashMap<i64, bool> = HashMap::new();
    for h in lexical {
        exact_def.insert(h.chunk_rowid, h.exact);
        let hit = lexical_hit(h);
        by_chunk.insert(hit.rowid, hit);
    }
    for h in vector_hits {
        let score = h.score;
        match by_chunk.get_mut(&h.rowid) {
            Some(hit) => {
                hit.arms.push(Arm::Vector);
                hit.vector_score = Some(score);
                hit.vector_rank = Some(h.ranking);
                hit.confident |= score >= VECTOR_CONFIDENCE_FLOOR;
            }
            None => {
                by_chunk.insert(h.rowid, vector_only(h));
            }
        }
    }
    // The request read in English ranks files beside the request as
    // written; the chunks it alone found make no request confident.
    for h in translated_hits {
        let ranking = h.ranking;
        let hit = by_chunk.entry(h.rowid).or_insert_with(|| {
            let mut hit = vector_only(h);
            hit.vector_score = None;
            hit.vector_rank = None;
            hit.score = 0.0;
            hit.confident = false;
            hit
        });
        hit.translated_rank = Some(ranking);
    }
    // What a plugin says a request calls a chunk ("the orders list" for a
    // Filament table of orders) names it as its identifier would, found by
    // either arm or not: a bug report about a table's columns may share few
    // words and little meaning with the table's code.
    let called: std::collections::HashSet<i64> = called.iter().map(|a| a.rowid).collect();
    for &rowid in &called {
        if by_chunk.contains_key(&rowid) {
            continue;
        }
        if let Some(stored) = store.chunk(rowid)? {
            by_chunk.insert(rowid, called_hit(stored));
        }
    }
    let total = (weights.vector + weights.keyword + weights.definition + weights.reference).max(f64::MIN_POSITIVE);
    let mut hits: Vec<SearchHit> = by_chunk
        .into_values()
        .map(|mut hit| {
            let vector = f64::from(hit.vector_score.unwrap_or(0.0).max(0.0));
            let keyword = hit.keyword_score.map_or(0.0, |s| s / best_kw);
            let exact = exact_def.get(&hit.rowid).copied().unwrap_or(false);
            let named = name_in_query(&hit.name, &terms);
            let called = called.contains(&hit.rowid);
            let definition = if exact || named || called { 1.0 } else { 0.0 };
            // For the file ranking, a one-word name ("send", "get") made of
            // a request's words is too weak a sign of what it asks for, and
            // so is a longer one whose words the request uses apart.
            hit.defines = exact
                || called
                || (named && split_identifier(&hit.name).iter().filter(|p| p.len() > 1).count() >= 2 && name_as_phrase(&hit.name, &sequence));
            hit.score = (weights.vector * vector + weights.keyword * keyword + weights.definition * definition) / total;
            hit
        })
        .collect();
    // The reference signal costs one full-text count per chunk (~0.1 ms at
    // 100k chunks): only for the hits that can still make the cut, best
    // first, at most 2n, and no further once the next hit's score plus the
    // largest possible boost cannot reach the n-th confident score so far
    // (boosts only raise scores, so that bar only rises).
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    if weights.reference > 0.0 {
        let most = weights.reference / total;
        let mut confident_scores: Vec<f64> = Vec::with_capacity(n * 2);
        for hit in hits.iter_mut().take(n * 2) {
            if confident_scores.len() >= n {
                confident_scores.sort_by(|a, b| b.total_cmp(a));
                if hit.score + most < confident_scores[n - 1] {
                    break;
                }
            }
            let refs = reference_count(store, &hit.name)?;
            hit.score += most * (refs / REFERENCE_SATURATION).min(1.0);
            if hit.confident {
                confident_scores.push(hit.score);
            }
        }
    }
    Ok(hits)
}

/// A chunk neither arm found that the request calls by an alias: it takes
/// part in the definitions ranking only, and makes no request confident.
fn called_hit(stored: code_intel_store::StoredChunk) -> SearchHit {
    let chunk = stored.chunk;
    SearchHit {
        file: stored.path,
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        kind: chunk.kind,
        name: chunk.name,
        qualified_name: chunk.qualified_name,
        score: 0.0,
        arms: vec![Arm::Lexical],
        vector_score: None,
        keyword_score: None,
        file_rank: 0,
        linked_files: Vec::new(),
        rowid: stored.rowid,
        confident: false,
        defines: true,
        every_word: false,
        quoted: None,
        vector_rank: None,
        translated_rank: None,
        paired: None,
    }
}

/// Chunks other than the definition that mention `name` as a word.
fn reference_count(store: &Store, name: &str) -> Result<f64, SearchError> {
    if name.chars().count() < 3 || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Ok(0.0);
    }
    let count = if name.is_ascii() {
        // The index's term statistics, remembered until the chunks change:
        // one lookup per name instead of a full-text count per search.
        let lower = name.to_ascii_lowercase();
        store.column_term_chunk_counts("content", &[lower.as_str()])?.first().copied().unwrap_or(0)
    } else {
        // A name the tokenizer may fold beyond lower case: counted by a query.
        let count: i64 = store
            .conn()
            .prepare_cached("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?1")
            .and_then(|mut s| s.query_row([format!("content:\"{name}\"")], |r| r.get(0)))
            .map_err(code_intel_store::StoreError::from)?;
        u64::try_from(count).unwrap_or(0)
    };
    // Counts are small: exact in f64.
    #[allow(clippy::cast_precision_loss)]
    let refs = count.saturating_sub(1) as f64;
    Ok(refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_made_of_query_words_are_definitions() {
        let terms = query_terms("where is computeOrderTotal, the order total");
        assert!(name_in_query("compute_order_total", &terms));
        assert!(name_in_query("OrderTotal", &terms));
        assert!(!name_in_query("login", &terms));
    }

    #[test]
    fn a_name_is_named_when_its_words_stand_together() {
        let phrase = |name: &str, query: &str| name_as_phrase(name, &query_sequence(query));
        assert!(phrase("transferServer", "in the admin server transfer dialog"));
        assert!(phrase("compute_order_total", "compute order total"));
        assert!(phrase("mailSettings", "the panel settings mail tab"));
        assert!(phrase("getSortingColumn", "get sorting columns"), "a plural s aside");
        assert!(!phrase("test_app", "our test suite runs the app's startup lifecycle"));
        assert!(!phrase("transferServer", "a server that is stuck in a transfer"));
        assert!(!phrase("useLyrics", "lyrics files use timestamps"));
        // A name starting with a verb is named in its own order only.
        assert!(!phrase("GetLyrics", "during a library scan lyrics get read from a file"));
        assert!(phrase("GetLyrics", "get lyrics for the song"));
        assert!(!phrase("ListProducts", "add a column to the products list"));
        assert!(phrase("ListProducts", "the list products page"));
    }

    #[test]
    fn an_alias_is_said_when_its_words_stand_together() {
        let said = |alias: &str, query: &str| alias_in_query(alias, &query_sequence(query));
        assert!(said("orders list", "The Customer column in the orders list shows numbers"));
        assert!(said("orders list", "add a column to the order list"), "a plural s aside");
        assert!(said("orders list", "the list of orders is slow"), "stop words aside, either order");
        assert!(said("product form", "add both fields to the product form"));
        assert!(!said("orders list", "orders placed today are missing from the price list"));
        assert!(!said("product form", "the product detail page"));
        assert!(!said("orders", "the orders are late"), "an alias of one word is never said");
        let said_ja = |alias: &str, query: &str| crate::glossary::term_runs_with(query, &[]).iter().any(|run| alias_in_terms(alias, run));
        assert!(said_ja("orders list", "管理画面の注文一覧で、種類で絞り込みたい"));
        assert!(said_ja("orders list", "注文の一覧に列を追加したい"));
        assert!(said_ja("product form", "商品のフォームで価格を必須にしたい"));
        assert!(!said_ja("orders list", "注文を削除すると一覧が空になる"), "words apart are not the alias");
        // A katakana word the repository names things with is a term too.
        let names: Vec<String> = ["board", "boards", "project"].map(String::from).to_vec();
        let said_kana = |alias: &str, query: &str| crate::glossary::term_runs_with(query, &names).iter().any(|run| alias_in_terms(alias, run));
        assert!(said_kana("boards list", "管理画面のボード一覧にフィルターを追加したい"));
        assert!(said_kana("boards list", "ボードの一覧で並び替えたい"));
        assert!(said_kana("orders list", "注文一覧で絞り込みたい"), "the vocabulary's terms as before");
        assert!(!said_kana("boards list", "ボードを削除したい"), "the board alone is no alias");
        assert!(!said_kana("boards list", "プロジェクト一覧にボード数を出したい"), "the list is of projects");
        assert!(said_kana("projects list", "プロジェクト一覧にボード数を出したい"));
        assert!(said_kana("boards table", "ボードテーブルに列を追加したい"), "beside a vocabulary term in one katakana run");
        let entries: Vec<String> = ["entry"].map(String::from).to_vec();
        let runs = crate::glossary::term_runs_with("エントリー一覧", &entries);
        assert!(runs.iter().any(|run| alias_in_terms("entries list", run)), "a plural in -ies: {runs:?}");
    }

    #[test]
    fn a_chunk_called_by_its_alias_joins_the_definitions_ranking() {
        use crate::test_support::{chunk, index_files};
        // The table of orders holds none of the request's words but its
        // screen's name; the infolist of returns holds them all.
        let mut table = chunk("t", "filament_table", "configure", None, (17, 68));
        table.content = "return $table->columns([TextColumn::make('customer.id'), TextColumn::make('supplier.id')]);".into();
        table.metadata = code_intel_core::Metadata::parse(r#"{"aliases": ["orders list", "orders table"]}"#.into()).unwrap();
        let mut infolist = chunk("i", "filament_infolist", "configure", None, (10, 40));
        infolist.content = "TextEntry::make('customer.name'), TextEntry::make('supplier.company_name') shows numbers".into();
        let mut files = vec![
            ("app/Filament/Resources/Orders/Tables/OrdersTable.php", "", vec![table]),
            ("app/Filament/Resources/ReturnDeliveries/Schemas/ReturnDeliveryInfolist.php", "", vec![infolist]),
        ];
        let noise: Vec<String> = (0..12).map(|i| format!("app/Services/Billing{i}.php")).collect();
        for path in &noise {
            let mut c = chunk("c", "class", "Billing", None, (1, 9));
            c.content = "invoice totals and taxes".into();
            files.push((path.as_str(), "", vec![c]));
        }
        let (_dir, _root, store) = index_files(&files);
        let query = "The customer and supplier columns in the orders list show numbers instead of the customer name";
        let filters = Filters::default();
        let called = called_chunks(&store, query, &filters).unwrap();
        assert_eq!(called.len(), 1, "{called:?}");
        // As in a large repository, where the arms' candidates miss it.
        let lexical: Vec<LexicalHit> =
            lexical_hits(&store, query, &english_terms(&store, query).unwrap(), &filters, 50).unwrap().into_iter().filter(|h| !h.path.ends_with("OrdersTable.php")).collect();
        assert!(lexical.iter().any(|h| h.path.ends_with("ReturnDeliveryInfolist.php")), "{lexical:#?}");
        let hits = fuse(&store, query, Vec::new(), Vec::new(), lexical, &called, &SearchWeights::default(), 10).unwrap();
        let table = hits.iter().find(|h| h.file.ends_with("OrdersTable.php")).expect("the called chunk is a hit");
        assert!(table.defines && !table.confident, "{table:#?}");
        let ranked = by_file(hits, query, &SearchWeights::default());
        let files: Vec<&str> = ranked.iter().map(|h| h.file.as_str()).collect();
        assert!(files.contains(&"app/Filament/Resources/Orders/Tables/OrdersTable.php"), "{ranked:#?}");
        // A path filter that leaves the table out leaves it out.
        let filters = Filters { path_glob: Some("app/Models/**".into()), kinds: Vec::new() };
        assert!(called_chunks(&store, query, &filters).unwrap().is_empty());
    }

    /// The request read in English ranks files beside the request as
    /// written: a file it found passes one the request's own vectors liked
    /// a little more; a chunk only it found joins the answer, never
    /// confident.
    #[test]
    fn the_request_read_in_english_ranks_files_beside_the_request() {
        use crate::test_support::{chunk, index_files};
        let files = vec![
            ("app/Orders/OrderList.php", "", vec![chunk("l", "class", "OrderList", None, (1, 9))]),
            ("app/Orders/OrderSort.php", "", vec![chunk("s", "class", "OrderSort", None, (1, 9))]),
            ("app/Orders/Sorting.php", "", vec![chunk("g", "class", "Sorting", None, (1, 9))]),
        ];
        let (_dir, _root, store) = index_files(&files);
        let chunk_of = |path: &str, ranking: f32| {
            let c = &store.file_chunks(path).unwrap()[0];
            ForestHit {
                rowid: c.rowid,
                path: path.to_string(),
                start_line: 1,
                end_line: 9,
                kind: "class".into(),
                name: c.name.clone(),
                qualified_name: None,
                score: ranking,
                similarity: ranking,
                ranking,
            }
        };
        let query = "注文一覧の並び順を変えたい";
        let own = || vec![chunk_of("app/Orders/OrderList.php", 0.6), chunk_of("app/Orders/OrderSort.php", 0.5)];
        let files_of = |translated: Vec<ForestHit>| {
            let hits = fuse(&store, query, own(), translated, Vec::new(), &[], &SearchWeights::default(), 10).unwrap();
            let only_read = hits.iter().find(|h| h.file == "app/Orders/Sorting.php").map(|h| h.confident);
            let ranked = by_file(hits, query, &SearchWeights::default());
            let mut files: Vec<String> = Vec::new();
            for h in ranked {
                if !files.contains(&h.file) {
                    files.push(h.file);
                }
            }
            (files, only_read)
        };
        let (before, none) = files_of(Vec::new());
        assert_eq!(before, ["app/Orders/OrderList.php", "app/Orders/OrderSort.php"]);
        assert_eq!(none, None);
        let (after, only_read) = files_of(vec![chunk_of("app/Orders/OrderSort.php", 0.7), chunk_of("app/Orders/Sorting.php", 0.9)]);
        assert_eq!(after[0], "app/Orders/OrderSort.php", "{after:?}");
        assert!(after.contains(&"app/Orders/Sorting.php".to_string()), "{after:?}");
        assert_eq!(only_read, Some(false), "a chunk only the reading found is never confident");
    }

    #[test]
    fn a_quoted_phrase_puts_the_file_holding_it_first() {
        use crate::test_support::{chunk, index_among_unrelated, with_content};
        // Many chunks talk about disks and the console; one holds the text
        // the request quotes.
        let mut files = vec![(
            "app/Widgets/ServerOverview.php".to_string(),
            with_content(chunk("m", "method", "diskUsage", None, (70, 85)), "if ($usage === null) { return 'Disk usage unavailable'; }"),
        )];
        let disk = with_content(
            chunk("c", "class", "Disk", None, (1, 9)),
            "unavailable disk: the usage of the console page, console page language, page language",
        );
        files.extend((0..8).map(|i| (format!("app/Console/Disk{i}.php"), disk.clone())));
        let (_dir, _root, store) = index_among_unrelated(files);
        let query = "the console page shows 'Disk usage unavailable' whatever the language";
        let mut request = SearchRequest::new(query);
        request.mode = Some(Mode::Lexical);
        let res = search(&store, None, &request).unwrap();
        assert_eq!(res.hits[0].file, "app/Widgets/ServerOverview.php", "{:#?}", res.hits);
        // Without the quotes the same words rank the widget below the noise.
        let mut request = SearchRequest::new(query.replace('\'', ""));
        request.mode = Some(Mode::Lexical);
        let res = search(&store, None, &request).unwrap();
        assert_ne!(res.hits[0].file, "app/Widgets/ServerOverview.php", "{:#?}", res.hits);
    }

    #[test]
    fn words_the_request_says_side_by_side_rank_the_file_saying_them_so() {
        use crate::test_support::{chunk, index_among_unrelated, with_content};
        // Two command parsers hold more of the request's words, apart; the
        // router says "trailing slash" as the request does.
        let mut files = vec![(
            "app/Routing/Redirects.php".to_string(),
            with_content(
                chunk("m", "method", "normalize", None, (1, 9)),
                "// strip the trailing slash, then redirect; the router keeps the path, the query string and the fragment of each url as they came in",
            ),
        )];
        let parser = with_content(
            chunk("c", "class", "Parser", None, (1, 9)),
            "the option is read first; whitespace at the trailing end of each argument is removed, the parser then makes its slash prefix permanent, long before any later redirect",
        );
        files.extend((0..2).map(|i| (format!("app/Console/Parser{i}.php"), parser.clone())));
        let (_dir, _root, store) = index_among_unrelated(files);
        let query = "add an option to make the trailing slash redirect permanent";
        let keyword = lexical_hits(&store, query, &[], &Filters::default(), 50).unwrap();
        assert!(keyword[0].path.starts_with("app/Console/"), "BM25 alone ranks a parser first: {keyword:#?}");
        // A chunk only the pairs find joins the answer, never confident.
        let mut only = Vec::new();
        add_paired(paired_hits(&store, query, &Filters::default(), 50).unwrap(), &mut only);
        assert_eq!(only.iter().map(|h| h.file.as_str()).collect::<Vec<_>>(), ["app/Routing/Redirects.php"]);
        assert!(only[0].paired.is_some() && only[0].keyword_score.is_none() && !only[0].confident);
        let mut request = SearchRequest::new(query);
        request.mode = Some(Mode::Lexical);
        let res = search(&store, None, &request).unwrap();
        assert_eq!(res.hits[0].file, "app/Routing/Redirects.php", "{:#?}", res.hits);
    }

    #[test]
    fn katakana_words_find_what_the_code_names_that_way() {
        use crate::test_support::{chunk, index_files};
        let with = |mut c: code_intel_core::Chunk, content: &str| {
            c.content = content.into();
            c
        };
        // エッグ is no word of the glossary; the repository names eggs and
        // revisions, and the request says them in katakana.
        let files = vec![
            ("app/Models/Egg.php", "", vec![with(chunk("c", "class", "Egg", None, (1, 30)), "class Egg extends Model { public function variables() {} }")]),
            (
                "app/Models/Revision.php",
                "",
                vec![with(chunk("c", "class", "Revision", None, (1, 30)), "class Revision extends Model { protected $table = 'revisions'; }")],
            ),
            ("app/Models/Node.php", "", vec![with(chunk("c", "class", "Node", None, (1, 30)), "class Node extends Model { public function variables() {} public function edit() {} }")]),
        ];
        let (_dir, _root, store) = index_files(&files);
        for (query, expected) in [("エッグの変数を編集したい", "app/Models/Egg.php"), ("古いリビジョンが消えない", "app/Models/Revision.php")] {
            let mut request = SearchRequest::new(query);
            request.mode = Some(Mode::Lexical);
            let res = search(&store, None, &request).unwrap();
            assert_eq!(res.hits.first().map(|h| h.file.as_str()), Some(expected), "{query}: {:#?}", res.hits);
        }
    }

    #[test]
    fn a_japanese_request_is_read_in_english_when_it_names_enough_terms() {
        let terms = |t: &[&str]| t.iter().map(|t| (*t).to_string()).collect::<Vec<_>>();
        assert_eq!(
            translated_query("ユーザーを削除するとエラーになる", &terms(&["user", "users", "delete", "destroy"])).as_deref(),
            Some("user users delete destroy")
        );
        // One term says too little of what the request is about.
        assert_eq!(translated_query("エクスポートが遅い", &terms(&["export"])), None);
        // A request in English is searched as it is.
        assert_eq!(translated_query("delete the user", &terms(&["user", "delete"])), None);
    }

    #[test]
    fn modes_parse() {
        assert_eq!("hybrid".parse::<Mode>(), Ok(Mode::Hybrid));
        assert!("fuzzy".parse::<Mode>().unwrap_err().contains("lexical"));
    }
}
