//! Tool profiles: which tools `code-intel serve` offers (`serve --tools`).
//!
//! Clients without deferred tool loading put every tool's schema into the
//! model's context up front. `code` offers the code tools alone for them;
//! `all` (the default) adds the session workflow's tools and its prompt.

/// Which tools the server lists and answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolProfile {
    /// The code tools and the session workflow (tools and the `code` prompt).
    #[default]
    All,
    /// The code tools only: search, definitions, references, structure,
    /// repo map, semantic search, index maintenance.
    Code,
}

impl ToolProfile {
    /// Whether the session workflow's tools (and prompt) are offered.
    #[must_use]
    pub fn sessions(self) -> bool {
        self == Self::All
    }

    /// What the server tells the client about how to use it (MCP
    /// `instructions`).
    #[must_use]
    pub fn instructions(self) -> String {
        if self.sessions() {
            format!("{CODE_INSTRUCTIONS}\n{SESSION_INSTRUCTIONS}")
        } else {
            CODE_INSTRUCTIONS.to_string()
        }
    }
}

/// How to use the code tools.
const CODE_INSTRUCTIONS: &str = "\
code-intel answers questions about one repository from an index of its code (functions, classes, \
methods, schemas) kept up to date in the background.
Workflow: find exact facts first — find_definitions / find_references / search_text / \
analyze_structure / get_function_at_line — and use semantic_search only when names are unknown; \
treat semantic hits as hypotheses until an exact tool confirms them. repo_map gives a ranked \
overview of the most important symbols; index_status says how complete the index is; sync_index \
re-indexes after large edits.
All paths are relative to the repository root; results are capped by max_results and max_chars \
and say `truncated` when they were cut.";

/// The session workflow and the write gate, briefly.
const SESSION_INSTRUCTIONS: &str = "\
Before changing code, work through a session (the `code` prompt has the steps): start_session(intent, \
request) -> set_query_frame -> explore with exact tools, passing session_id -> submit_understanding -> \
READY -> check_write_target(session_id, path) before each edit -> record_outcome. Writes are gated: \
only an IMPLEMENT or MODIFY session in READY may edit, and only files a tool read in that session; \
editor hooks (`code-intel init`) enforce the same gate.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::CodeIntelServer;
    use crate::mcp::session_tools::SESSION_TOOLS;

    fn names(profile: ToolProfile) -> Vec<String> {
        let mut v: Vec<String> = CodeIntelServer::tools_of(profile).list_all().into_iter().map(|t| t.name.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn the_code_profile_offers_the_code_tools_alone() {
        let code = names(ToolProfile::Code);
        let all = names(ToolProfile::All);
        assert_eq!(code.len(), 9, "{code:?}");
        assert!(code.iter().all(|n| !SESSION_TOOLS.contains(&n.as_str())), "{code:?}");
        assert_eq!(all.len(), code.len() + SESSION_TOOLS.len(), "{all:?}");
        // No session_id argument where no session can be started.
        for tool in CodeIntelServer::tools_of(ToolProfile::Code).list_all() {
            assert!(tool.input_schema.get("properties").and_then(|p| p.get("session_id")).is_none(), "{}", tool.name);
        }
        assert!(!ToolProfile::Code.instructions().contains("start_session"));
        let all = ToolProfile::All.instructions();
        assert!(all.contains("start_session") && all.contains("check_write_target") && all.contains("IMPLEMENT or MODIFY"), "{all}");
    }
}
