//! `validate_symbol_relevance`: NL -> symbol relevance in three tiers, with
//! learned pairs and map hints.

use super::*;
use crate::results::{
    CachedPair, LearnedPairsCleaned, RefusedConfirmation, RelevanceResult, Suggestion, SymbolRelevance, Thresholds, to_json,
};

impl Workflow {

    /// `validate_symbol_relevance(session_id, target_feature, symbols,
    /// relevant_symbols?, code_evidence?)`.
    ///
    /// # Errors
    /// Unknown session; `code_evidence` missing when confirming.
    pub fn validate_symbol_relevance(
        &self,
        session_id: &str,
        target_feature: Option<&str>,
        symbols: &[String],
        relevant_symbols: &[String],
        code_evidence: Option<&str>,
    ) -> Result<Value> {
        if symbols.is_empty() {
            return Err(SessionError::invalid("symbols", "give the candidate symbols to check"));
        }
        let evidence = code_evidence.map(str::trim).unwrap_or_default();
        if !relevant_symbols.is_empty() && evidence.chars().count() < MIN_CODE_EVIDENCE_CHARS {
            return Err(SessionError::invalid(
                "code_evidence",
                format!(
                    "required when confirming relevant_symbols: cite the code that proves the mapping (a method, a comment, a naming convention), at least {MIN_CODE_EVIDENCE_CHARS} characters"
                ),
            ));
        }
        for r in relevant_symbols {
            if !symbols.contains(r) {
                return Err(SessionError::invalid("relevant_symbols", format!("{r:?} is not one of symbols")));
            }
        }
        let map_hits = self.services.map.search(target_feature.unwrap_or_default(), MAP_HINT_LIMIT);
        self.with_session(session_id, |conn, s| {
            let target = target_feature
                .map(str::to_string)
                .or_else(|| s.frame.as_ref().and_then(|f| f.value(Slot::TargetFeature).map(str::to_string)))
                .ok_or_else(|| {
                    SessionError::invalid("target_feature", "not given and the session's frame has none; pass target_feature")
                })?;
            let cleaned = self.cleanup_learned_pairs(conn)?;
            let (scored, warnings) = self.score(&target, symbols);
            let mut results = Vec::new();
            let mut confirmed = Vec::new();
            let mut refused = Vec::new();
            let mut forced = false;
            for (sym, score) in symbols.iter().zip(scored.scores.iter()) {
                let t = tier(*score);
                let defs = self.definitions(sym)?;
                let mut r = SymbolRelevance {
                    symbol: sym.clone(),
                    score: *score,
                    tier: t,
                    approved: t != Tier::Rejected,
                    in_index: !defs.is_empty(),
                    definitions: defs.iter().take(3).map(|d| format!("{}:{}", d.file, d.start_line)).collect(),
                    source: if t == Tier::Rejected { "REJECTED" } else { "FACT" }.into(),
                    risk_adjustment: None,
                    warning: None,
                    reinvestigation_guidance: None,
                };
                match t {
                    Tier::Fact => {}
                    Tier::Accepted => {
                        r.risk_adjustment = Some("HIGH".into());
                        r.warning = Some(format!("similarity {score:.2} is in the grey zone; exploration requirements rise to HIGH"));
                    }
                    Tier::Rejected => r.reinvestigation_guidance = Some(reinvestigation_guidance(&target, sym)),
                }
                if relevant_symbols.contains(sym) {
                    if t == Tier::Rejected || defs.is_empty() {
                        refused.push(RefusedConfirmation {
                            symbol: sym.clone(),
                            why: if defs.is_empty() { "not defined in the index".to_string() } else { format!("score {score:.2} < {}", crate::relevance::REJECT_THRESHOLD) },
                        });
                    } else {
                        if t == Tier::Accepted {
                            forced = true;
                        }
                        confirmed.push(MappedSymbol {
                            symbol: sym.clone(),
                            source: Source::Fact,
                            score: *score,
                            tier: t,
                            method: scored.method.clone(),
                            code_evidence: Some(evidence.to_string()),
                        });
                    }
                }
                results.push(r);
            }
            let mut suggestions: Vec<(String, f32)> = symbols
                .iter()
                .cloned()
                .zip(scored.scores.iter().copied())
                .filter(|(_, sc)| tier(*sc) != Tier::Rejected)
                .collect();
            suggestions.sort_by(|a, b| b.1.total_cmp(&a.1));
            let t = now();
            let cached: Vec<CachedPair> = db::learned_pairs(conn)?
                .into_iter()
                .filter(|p| p.expires_at >= t && p.nl_term.eq_ignore_ascii_case(target.trim()))
                .map(|p| CachedPair {
                    nl_term: p.nl_term,
                    symbol: p.symbol,
                    similarity: p.similarity,
                    code_evidence: p.code_evidence,
                    session_id: p.session_id,
                    learned_at: p.learned_at,
                    expires_at: p.expires_at,
                })
                .collect();
            let mut risk_note = None;
            if forced {
                let w = format!("grey-zone relevance confirmed for {target:?}; risk forced to HIGH");
                if s.risk_level != RiskLevel::High {
                    s.risk_level = RiskLevel::High;
                    risk_note = Some(if s.phase == Phase::Ready {
                        "risk raised to HIGH after READY: HIGH requirements apply to the next submission".to_string()
                    } else {
                        "risk raised to HIGH: exploration requirements are now 5/2/4/2 with slot evidence".to_string()
                    });
                }
                s.risk_reasons.push(w);
            }
            let frame = s.frame.get_or_insert_with(|| QueryFrame { raw_query: s.query.clone(), ..QueryFrame::default() });
            for m in &confirmed {
                frame.mapped_symbols.retain(|x| x.symbol != m.symbol);
                frame.mapped_symbols.push(m.clone());
            }
            let validation_prompt = format!(
                "Which of these symbols implement {target:?}? Confirm with relevant_symbols and cite code_evidence (a method, a comment, a naming convention in the code). Symbols scored below {} are rejected by the server whatever you answer.",
                crate::relevance::REJECT_THRESHOLD
            );
            let (map_hits, map_unavailable) = match &map_hits {
                Ok(h) => (h.clone(), None),
                Err(e) => (Vec::new(), Some(e.clone())),
            };
            Ok(to_json(&RelevanceResult {
                session_id: s.id.clone(),
                target_feature: target,
                method: scored.method,
                method_note: scored.note,
                thresholds: Thresholds { fact: FACT_THRESHOLD, reject: crate::relevance::REJECT_THRESHOLD },
                results,
                embedding_suggestions: suggestions.into_iter().map(|(symbol, similarity)| Suggestion { symbol, similarity }).collect(),
                cached_matches: cached,
                map_hits,
                map_unavailable,
                confirmed: confirmed.into_iter().map(|m| m.symbol).collect(),
                refused_confirmations: refused,
                risk_level: s.risk_level,
                risk_note,
                learned_pairs_cleaned: LearnedPairsCleaned { expired: cleaned.0, symbol_gone: cleaned.1 },
                warnings,
                validation_prompt,
            }))
        })
    }
}
