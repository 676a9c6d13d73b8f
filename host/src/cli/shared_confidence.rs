//! Is an organisation-wide answer confident? Judged as local search judges
//! its own (`code_intel_search::hybrid`), against the shared store's words
//! instead of the local index's.
//!
//! Confident when some chunk holds every word of the request, some chunk
//! is the identifier it writes, some chunk's calibrated similarity reaches
//! the confidence floor, a Japanese request names two software words
//! ([`code_intel_search::glossary`]) found by keyword, or two thirds of its
//! words (three at least) are in the published chunks and the keywords
//! found something; and not when most of its words are in no published
//! chunk and are no words of a language either (gibberish: hashes,
//! keyboard mashing), or it reads as everyday talk
//! ([`code_intel_search::topic`]) that the published repositories do not
//! speak. Otherwise the answer is "no confident match" and no hits.
//!
//! Not as locally: quoted phrases are not searched on their own.

use std::collections::{HashMap, HashSet};

use code_intel_search::semantic::{Baselines, VECTOR_CONFIDENCE_FLOOR, calibrate};
use code_intel_search::vocabulary::{Vocabulary, known_together, vocabulary};
use code_intel_shared::{FullTextQuery, Scope, SearchOutcome, SharedStore};

/// What the judgement needs beyond the store's answer.
#[derive(Clone, Copy, Default)]
pub struct Judgement<'a> {
    /// The vocabulary of the model that embedded the request (a remote
    /// encoder has none): tells a word of a language from gibberish.
    pub dictionary: Option<&'a code_intel_embed::Encoder>,
    /// The request's baselines under the model that embedded it
    /// ([`code_intel_search::semantic::AnchorVectors`]): what its
    /// similarities are calibrated against.
    pub baselines: Option<Baselines>,
    /// The request reads as everyday talk ([`reads_as_everyday`]).
    pub everyday: bool,
}

/// The topic verdict as local search takes it: the vote of the model that
/// embedded the request (`baselines`); when that was the English model and
/// it leans to everyday talk without saying so
/// ([`code_intel_search::topic::SECOND_OPINION_VOTES`]), the main model's
/// vote too (`main_opinion`, asked only then), either verdict of everyday
/// talk standing.
pub fn reads_as_everyday(baselines: Option<Baselines>, main_opinion: impl FnOnce() -> Option<Baselines>) -> bool {
    match baselines {
        None => false,
        Some(b) if b.everyday => true,
        Some(b) if b.everyday_votes >= code_intel_search::topic::SECOND_OPINION_VOTES => main_opinion().is_some_and(|m| m.everyday),
        Some(_) => false,
    }
}

/// Calibrates each hit's similarity (its `vector_score`) and judges the
/// answer: `Some(message)` when it is not confident (see the module docs).
///
/// # Errors
/// Database errors while looking up the request's words.
pub fn judge(
    store: &SharedStore,
    scope: &Scope,
    query: &str,
    outcome: &mut SearchOutcome,
    judgement: &Judgement<'_>,
    defines: impl Fn(&str) -> u8,
) -> Result<Option<String>, String> {
    if let Some(baselines) = judgement.baselines {
        for hit in &mut outcome.hits {
            #[allow(clippy::cast_possible_truncation)]
            let score = hit.similarity.map(|s| calibrate(s as f32, baselines.forest));
            hit.vector_score = score;
        }
    }
    let best_vector = outcome.hits.iter().filter_map(|h| h.vector_score).fold(0.0f32, f32::max);
    let every_word = outcome.every_word;
    // Whether the words are known is only asked when no chunk holds them
    // all (one lookup per word, in one round trip).
    let vocabulary = if every_word { None } else { Some(store_vocabulary(store, scope, query, judgement.dictionary)?) };
    let gibberish = vocabulary.as_ref().is_some_and(Vocabulary::off_topic);
    let found_by_keyword = outcome.hits.iter().any(|h| h.keyword_score.is_some());
    let glossary_confident = code_intel_search::glossary::matched_terms(query) >= 2 && found_by_keyword;
    let familiar = found_by_keyword && vocabulary.as_ref().is_some_and(Vocabulary::familiar);
    let names = outcome.hits.iter().map(|h| defines(&h.name)).max().unwrap_or(0);
    let confident_hit = every_word || names >= 2 || best_vector >= VECTOR_CONFIDENCE_FLOOR;
    let mut everyday = judgement.everyday && !every_word && names == 0;
    if everyday && let Some(v) = vocabulary.as_ref().filter(|v| v.speaks()) {
        everyday = !(v.cjk || store_knows_together(store, scope, &v.content_known_words)?);
    }
    if !gibberish && !everyday && (confident_hit || glossary_confident || familiar) {
        return Ok(None);
    }
    let best = outcome.hits.iter().filter_map(|h| h.vector_score).reduce(f32::max);
    Ok(Some(match best {
        _ if everyday => "no confident match: the request reads as everyday language rather than about software, and the published repositories do not use its words; say it in the code's terms or name an identifier".to_string(),
        _ if gibberish => format!(
            "no confident match: most of the query's words are in no published repository and are no words the model knows either (best similarity {best_vector:.2}); check the spelling, or try other words or an identifier"
        ),
        Some(s) => format!(
            "no confident match: the closest chunk scored {s:.2}, below the confidence floor {VECTOR_CONFIDENCE_FLOOR}; try other words or an identifier"
        ),
        None => "no confident match: no published chunk contains these words; try other words or an identifier".to_string(),
    }))
}

/// The request's [`Vocabulary`] against the published chunks of `scope`:
/// the words it asks about are gathered first, then looked up together.
fn store_vocabulary(
    store: &SharedStore,
    scope: &Scope,
    query: &str,
    dictionary: Option<&code_intel_embed::Encoder>,
) -> Result<Vocabulary, String> {
    let mut words: Vec<String> = Vec::new();
    vocabulary(query, dictionary, |word| {
        words.push(word.to_string());
        Ok::<_, String>(false)
    })?;
    let known = held(store, scope, words.iter().map(String::as_str))?;
    vocabulary(query, dictionary, |word| Ok(known.contains(word)))
}

/// Does some published chunk of `scope` hold two of `words` together?
fn store_knows_together(store: &SharedStore, scope: &Scope, words: &[String]) -> Result<bool, String> {
    let mut pairs: Vec<String> = Vec::new();
    known_together(words, |a, b| {
        pairs.push(format!("{a} {b}"));
        Ok::<_, String>(false)
    })?;
    Ok(!held(store, scope, pairs.iter().map(String::as_str))?.is_empty())
}

/// Which of `texts` some published chunk of `scope` matches (every word,
/// each by itself or by its stem, as [`FullTextQuery`] matches them).
fn held<'t>(store: &SharedStore, scope: &Scope, texts: impl Iterator<Item = &'t str>) -> Result<HashSet<&'t str>, String> {
    let queries: HashMap<&str, String> = texts.filter_map(|t| FullTextQuery::new(t).all().map(|q| (t, q))).collect();
    let (texts, queries): (Vec<&str>, Vec<String>) = queries.into_iter().unzip();
    let found = store.held(&queries, scope)?;
    Ok(texts.into_iter().zip(found).filter(|(_, f)| *f).map(|(t, _)| t).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use code_intel_search::topic::{EVERYDAY_VOTES, SECOND_OPINION_VOTES};

    fn voted(votes: usize) -> Option<Baselines> {
        Some(Baselines { everyday: votes >= EVERYDAY_VOTES, everyday_votes: votes, ..Baselines::default() })
    }

    #[test]
    fn the_main_model_seconds_a_vote_that_leans_to_everyday_talk() {
        let asked = std::cell::Cell::new(0);
        let main = |verdict: Option<Baselines>| {
            let asked = &asked;
            move || {
                asked.set(asked.get() + 1);
                verdict
            }
        };
        // A clear verdict either way stands alone.
        assert!(reads_as_everyday(voted(EVERYDAY_VOTES), main(voted(0))));
        assert!(!reads_as_everyday(voted(SECOND_OPINION_VOTES - 1), main(voted(EVERYDAY_VOTES))));
        assert!(!reads_as_everyday(None, main(voted(EVERYDAY_VOTES))), "no model, no vote");
        assert_eq!(asked.get(), 0);
        // Leaning: the main model decides.
        assert!(reads_as_everyday(voted(SECOND_OPINION_VOTES), main(voted(EVERYDAY_VOTES))));
        assert!(!reads_as_everyday(voted(SECOND_OPINION_VOTES), main(voted(1))));
        assert!(!reads_as_everyday(voted(SECOND_OPINION_VOTES), main(None)), "no second model: the first vote");
        assert_eq!(asked.get(), 3);
    }
}
