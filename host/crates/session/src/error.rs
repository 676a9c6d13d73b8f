//! Errors of the workflow. Each names what to fix.

use crate::model::{Intent, Phase};

/// Why a workflow call could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No session has this id.
    #[error("unknown session_id {0:?}: start one with start_session(intent, query), or list it with get_session_status")]
    UnknownSession(String),
    /// An argument is missing or malformed.
    #[error("invalid argument `{field}`: {message}")]
    InvalidArgument { field: String, message: String },
    /// The call is not allowed in the session's phase.
    #[error("{action} is not allowed in phase {phase}: {reason}. Next: {next}")]
    WrongPhase { action: String, phase: Phase, reason: String, next: String },
    /// A write-related call on a session whose intent never writes.
    #[error(
        "{action} is refused: a {intent} session never writes (only IMPLEMENT and MODIFY sessions in READY may edit). Next: start_session(IMPLEMENT or MODIFY, the request) for the change"
    )]
    ReadOnlySession { action: String, intent: Intent },
    /// The session already has an outcome.
    #[error("session {0} is closed (an outcome was recorded); start a new session with start_session")]
    Closed(String),
    /// `record_outcome` on a session closed with another outcome.
    #[error(
        "session {id} is closed with outcome `{recorded}`: an outcome is recorded once (the same outcome again returns what was recorded, and `failure` may take back a `success` or `partial`); for new work, start a new session with start_session"
    )]
    OutcomeRecorded { id: String, recorded: String },
    /// The store failed.
    #[error("session store error: {0}")]
    Store(#[from] rusqlite::Error),
    /// The database could not be opened or migrated.
    #[error("{0}")]
    Db(#[from] code_intel_store::StoreError),
    /// Reading or writing a file under `.code-intel/` failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A persisted session could not be read back.
    #[error("session {id} has unreadable state ({message}); it was written by an incompatible version")]
    Corrupt { id: String, message: String },
    /// A host service (index, map, relevance) failed.
    #[error("{0}")]
    Service(String),
}

impl SessionError {
    /// An [`SessionError::InvalidArgument`].
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument { field: field.into(), message: message.into() }
    }

    /// A stable machine-readable code for MCP responses.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownSession(_) => "unknown_session",
            Self::InvalidArgument { .. } => "invalid_argument",
            Self::WrongPhase { .. } => "phase_refused",
            Self::ReadOnlySession { .. } => "read_only_session",
            Self::Closed(_) | Self::OutcomeRecorded { .. } => "session_closed",
            Self::Store(_) | Self::Db(_) | Self::Io { .. } | Self::Corrupt { .. } => "internal",
            Self::Service(_) => "service_error",
        }
    }
}

/// Result of workflow calls.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;
