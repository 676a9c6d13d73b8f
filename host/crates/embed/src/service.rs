//! The shared model handle: resolves and loads the model once, in the
//! background, so a server can answer at once and tools can wait briefly for
//! the model or report that it is still loading.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::encoder::{Encoder, EncoderOptions};
use crate::model::{ResolveOptions, install_hint, resolve};

/// Where the model is.
#[derive(Clone)]
pub enum ModelState {
    /// Being resolved or loaded in the background.
    Loading,
    Ready(Arc<Encoder>),
    /// No usable model; the reason says why and what to do.
    Unavailable(String),
}

impl ModelState {
    /// The `vector_search` wording of the state: `ready`, `initializing`,
    /// `unavailable: <reason>`.
    #[must_use]
    pub fn status(&self) -> String {
        match self {
            Self::Loading => "initializing".to_string(),
            Self::Ready(_) => "ready".to_string(),
            Self::Unavailable(reason) => format!("unavailable: {reason}"),
        }
    }

    #[must_use]
    pub fn encoder(&self) -> Option<&Arc<Encoder>> {
        match self {
            Self::Ready(e) => Some(e),
            _ => None,
        }
    }
}

impl std::fmt::Debug for ModelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.status())
    }
}

/// A cheap-to-clone handle to the one encoder of the process.
#[derive(Clone)]
pub struct ModelHandle {
    inner: Arc<(Mutex<ModelState>, Condvar)>,
}

impl ModelHandle {
    fn with_state(state: ModelState) -> Self {
        Self { inner: Arc::new((Mutex::new(state), Condvar::new())) }
    }

    /// A handle with a model already loaded.
    #[must_use]
    pub fn ready(encoder: Arc<Encoder>) -> Self {
        Self::with_state(ModelState::Ready(encoder))
    }

    /// A handle that will never have a model.
    #[must_use]
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self::with_state(ModelState::Unavailable(reason.into()))
    }

    /// Resolves and loads on the calling thread.
    #[must_use]
    pub fn load_blocking(resolve_options: &ResolveOptions, encoder_options: &EncoderOptions) -> Self {
        Self::with_state(load(resolve_options, encoder_options))
    }

    /// Starts resolving and loading on a background thread and returns at once
    /// (the model warm-up of SPEC §5: the MCP handshake never waits for it).
    #[must_use]
    pub fn spawn(resolve_options: ResolveOptions, encoder_options: EncoderOptions) -> Self {
        let handle = Self::with_state(ModelState::Loading);
        let inner = Arc::clone(&handle.inner);
        let spawned = std::thread::Builder::new().name("code-intel-model-load".to_string()).spawn(move || {
            let state = load(&resolve_options, &encoder_options);
            let (lock, cvar) = &*inner;
            if let Ok(mut s) = lock.lock() {
                *s = state;
            }
            cvar.notify_all();
        });
        if let Err(e) = spawned {
            return Self::unavailable(format!("cannot start the model loading thread: {e}"));
        }
        handle
    }

    /// The state now.
    #[must_use]
    pub fn state(&self) -> ModelState {
        self.inner.0.lock().map_or_else(|_| ModelState::Unavailable("model state lock poisoned".to_string()), |s| s.clone())
    }

    /// Waits up to `timeout` for loading to finish, then returns the state
    /// (still [`ModelState::Loading`] if it did not).
    #[must_use]
    pub fn wait(&self, timeout: Duration) -> ModelState {
        let (lock, cvar) = &*self.inner;
        let deadline = Instant::now() + timeout;
        let Ok(mut state) = lock.lock() else {
            return ModelState::Unavailable("model state lock poisoned".to_string());
        };
        while matches!(*state, ModelState::Loading) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match cvar.wait_timeout(state, left) {
                Ok((s, _)) => state = s,
                Err(_) => return ModelState::Unavailable("model state lock poisoned".to_string()),
            }
        }
        state.clone()
    }
}

fn load(resolve_options: &ResolveOptions, encoder_options: &EncoderOptions) -> ModelState {
    if let Some(endpoint) = &resolve_options.endpoint {
        return match Encoder::remote(crate::remote::RemoteOptions::new(endpoint, &resolve_options.spec)) {
            Ok(encoder) => ModelState::Ready(Arc::new(encoder)),
            Err(e) => {
                tracing::error!("semantic search unavailable: {e}");
                ModelState::Unavailable(e.to_string())
            }
        };
    }
    let resolved = match resolve(resolve_options) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("semantic search unavailable: {e}; {}", install_hint());
            return ModelState::Unavailable(e.reason);
        }
    };
    match Encoder::load(&resolved, encoder_options) {
        Ok(encoder) => ModelState::Ready(Arc::new(encoder)),
        Err(e) => {
            tracing::error!("semantic search unavailable: {e}");
            ModelState::Unavailable(e.to_string())
        }
    }
}
