//! The server-enforced session workflow (SPEC §8): a request becomes a
//! QueryFrame of slots, missing slots drive exploration, the server judges the
//! submitted evidence against the tool calls it recorded, and only a READY
//! session may write, and only to files it explored.
//!
//! ```text
//! start_session -> set_query_frame -> EXPLORATION --submit_understanding--> READY
//!                                          |                                 ^
//!                                          +--> SEMANTIC --submit_semantic--> VERIFICATION
//!                                                          --submit_verification--+
//! ```
//!
//! This crate is pure logic plus persistence (through `code-intel-store`'s
//! session tables). It knows nothing about MCP, the vector index or the
//! embedding model: the host provides the symbol index, the map collection and
//! a relevance scorer through the traits in [`services`] and [`relevance`].
//! It must not depend on `rmcp`, `code-intel-embed`, `code-intel-vector` or
//! `code-intel-search`.

pub mod agreement;
pub mod error;
pub mod frame;
pub mod matrix;
pub mod model;
pub mod record;
pub mod relevance;
pub mod requirements;
pub mod results;
pub mod router;
pub mod services;
pub mod workflow;

pub use error::{Result, SessionError};
pub use model::{Intent, Outcome, Phase, RiskLevel, SemanticReason, Slot, Source};
pub use relevance::{LexicalRelevance, Relevance, Scored};
pub use services::{Agreement, AgreementMap, MapHit, SymbolIndex, SymbolSite};
pub use workflow::{Services, Workflow, WorkflowConfig};
