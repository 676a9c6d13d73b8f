//! The MCP server: `code-intel serve` over stdio (rmcp).
//!
//! [`CodeIntelServer`] answers `initialize` at once; opening the index,
//! syncing it and loading models run in the background ([`state`]). Tools
//! come from tool routers that are added together in
//! [`CodeIntelServer::tools_of`] (by [`ToolProfile`]): the code tools live in [`code_tools`],
//! other modules add their own router there and may observe or refuse calls
//! through a [`ToolHook`].
//!
//! Nothing but the transport writes to stdout ([`stdio`]); logs go to stderr.

pub mod budget;
pub mod code_tools;
pub mod jsonrpc;
pub mod outline;
pub mod profile;
pub mod progress;
pub mod render;
pub mod schema;
pub mod session_tools;
pub mod shared;
pub mod state;
pub mod stdio;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

pub use state::ServerState;

pub use profile::ToolProfile;

/// Observes (and may refuse) tool calls; registered by modules that add
/// behaviour around the code tools (e.g. the session workflow records every
/// exploration call and enforces phase rules).
pub trait ToolHook: Send + Sync {
    /// Called before a tool runs. `Err(message)` refuses the call: the
    /// message is returned to the client as the tool's error result.
    ///
    /// # Errors
    /// The refusal message.
    fn before_call(&self, _tool: &str, _arguments: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
        Ok(())
    }

    /// Called after a tool ran, with its result (success or tool error).
    fn after_call(&self, _tool: &str, _arguments: &serde_json::Map<String, serde_json::Value>, _result: &CallToolResult) {}
}

/// The MCP server for one repository.
#[derive(Clone)]
pub struct CodeIntelServer {
    state: Arc<ServerState>,
    tools: Arc<ToolRouter<Self>>,
    prompts: Arc<PromptRouter<Self>>,
    profile: ToolProfile,
}

impl CodeIntelServer {
    /// A server over `state` offering the tools of `profile`.
    #[must_use]
    pub fn with_profile(state: Arc<ServerState>, profile: ToolProfile) -> Self {
        session_tools::install(&state);
        let prompts = if profile.sessions() { Self::session_prompts() } else { PromptRouter::new() };
        Self { state, tools: Arc::new(Self::tools_of(profile)), prompts: Arc::new(prompts), profile }
    }

    /// Every tool the server offers (the `all` profile).
    #[cfg(test)]
    #[must_use]
    pub fn tool_router() -> ToolRouter<Self> {
        Self::tools_of(ToolProfile::All)
    }

    /// The tools of one profile: one router per module, added together. A
    /// module that brings tools adds its router here.
    #[must_use]
    pub fn tools_of(profile: ToolProfile) -> ToolRouter<Self> {
        let mut router = Self::code_tools();
        if profile.sessions() {
            router.merge(Self::session_tools());
            session_tools::advertise_session_id(&mut router);
        }
        router
    }

    /// The shared state (repository root, index, configuration, hooks).
    #[must_use]
    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }
}

impl ServerHandler for CodeIntelServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.profile.sessions() {
            ServerCapabilities::builder().enable_tools().enable_prompts().build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("code-intel", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.profile.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult { tools: self.tools.list_all(), ..Default::default() })
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.tools.has_route(&name) {
            let mut known: Vec<String> = self.tools.list_all().into_iter().map(|t| t.name.to_string()).collect();
            known.sort();
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}; this server offers: {}", known.join(", ")),
                None,
            ));
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        let hooks = self.state.hooks();
        for hook in &hooks {
            if let Err(message) = hook.before_call(&name, &arguments) {
                let refused = CallToolResult::error(vec![ContentBlock::text(message)]);
                for hook in &hooks {
                    hook.after_call(&name, &arguments, &refused);
                }
                return Ok(refused.into());
            }
        }
        let mut request = request;
        session_tools::strip_session_id(&mut request);
        let response = self.tools.call(ToolCallContext::new(self, request, context)).await?;
        if let CallToolResponse::Complete(result) = &response {
            for hook in &hooks {
                hook.after_call(&name, &arguments, result);
            }
        }
        Ok(response)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult { prompts: self.prompts.list_all(), ..Default::default() })
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompt_context =
            rmcp::handler::server::prompt::PromptContext::new(self, request.name, request.arguments, context);
        self.prompts.get_prompt(prompt_context).await
    }
}

/// Options of `code-intel serve`.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Repository root.
    pub repo: PathBuf,
    /// Skip the background sync at start (the index is used as it is).
    pub no_sync: bool,
    /// Which tools to offer.
    pub tools: ToolProfile,
}

/// Runs the server on stdio until the client disconnects.
///
/// # Errors
/// When the repository cannot be opened or the transport fails to start.
pub fn serve(options: &ServeOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let (reader, writer) = stdio::take_stdio()?;
        let (reader, writer, stdout_task) = stdio::guard(reader, writer);
        let state = Arc::new(ServerState::open(&options.repo)?);
        tracing::info!(repo = %state.root().path().display(), "code-intel serve: ready for the handshake");
        let server = CodeIntelServer::with_profile(state.clone(), options.tools);
        if !options.no_sync {
            state.start_background_sync();
        }
        let running = server.serve((reader, writer)).await?;
        let reason = running.waiting().await;
        tracing::info!(?reason, "client disconnected; shutting down");
        state.shutdown().await;
        // The last answers are written before the process ends.
        let _ = tokio::time::timeout(state::SHUTDOWN_GRACE, stdout_task).await;
        anyhow::Ok(())
    })?;
    // Background work that did not stop in time is abandoned: every index
    // write is transactional, so nothing half-written survives.
    runtime.shutdown_timeout(state::SHUTDOWN_GRACE);
    Ok(())
}
