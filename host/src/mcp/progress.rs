//! MCP progress notifications for one request (`sync_index`): chunking
//! (`scanning files`, `indexing N/M files`), then embedding (`embedding N/M
//! chunks`, first of a pass already under way if there is one), on the
//! request's progress token, in order, throttled.
//!
//! Progress never goes back: each phase counts on from where the previous
//! one ended (files, then files + chunks), and `total` grows when the
//! embedding phase starts. Notifications go out through one queue so they
//! arrive in the order they were made, and [`Reporter::finish`] waits for
//! the queue to drain so none arrives after the response.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use tokio::sync::mpsc;

/// Shortest interval between two notifications of one phase: a client
/// redraws at most ~10 times a second anyway.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Longest wait in [`Reporter::finish`] for queued notifications: they are
/// small writes to stdout; past this the client is not reading.
const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// Progress of one request; does nothing when the request had no token.
pub struct Reporter {
    sender: Mutex<Option<mpsc::UnboundedSender<ProgressNotificationParam>>>,
    drained: Mutex<Option<tokio::task::JoinHandle<()>>>,
    token: Option<ProgressToken>,
    state: Mutex<Sent>,
}

/// What was last sent.
#[derive(Debug, Default)]
struct Sent {
    at: Option<Instant>,
    phase: Option<&'static str>,
    /// Highest progress sent so far.
    progress: f64,
    /// Where the current phase's count starts.
    base: f64,
}

impl Sent {
    /// The (progress, total) to send for `done` of `total` in `phase`, or
    /// `None` when throttled.
    fn advance(&mut self, phase: &'static str, done: f64, total: Option<f64>, last: bool, now: Instant) -> Option<(f64, Option<f64>)> {
        if self.phase != Some(phase) {
            self.base = self.progress;
        } else if !last && self.at.is_some_and(|at| now.duration_since(at) < PROGRESS_INTERVAL) {
            return None;
        }
        self.progress = (self.base + done).max(self.progress);
        self.at = Some(now);
        self.phase = Some(phase);
        Some((self.progress, total.map(|t| self.base + t)))
    }
}

impl Reporter {
    /// A reporter for the request of `context` (inert without a progress token).
    /// Must be called inside the tokio runtime.
    pub fn new(context: &RequestContext<RoleServer>) -> Arc<Self> {
        let token = context.meta.get_progress_token();
        let (sender, drained) = if token.is_some() {
            let (tx, mut rx) = mpsc::unbounded_channel::<ProgressNotificationParam>();
            let peer = context.peer.clone();
            let task = tokio::spawn(async move {
                while let Some(param) = rx.recv().await {
                    let _ = peer.notify_progress(param).await;
                }
            });
            (Some(tx), Some(task))
        } else {
            (None, None)
        };
        Arc::new(Self {
            sender: Mutex::new(sender),
            drained: Mutex::new(drained),
            token,
            state: Mutex::new(Sent::default()),
        })
    }

    /// Whether the client follows this request's progress.
    pub fn wanted(&self) -> bool {
        self.token.is_some()
    }

    /// Reports chunking progress.
    pub fn sync(&self, p: code_intel_index::Progress) {
        let (phase, message) = match p.phase {
            code_intel_index::Phase::Waiting => ("waiting", "waiting for another sync of this repository".to_string()),
            code_intel_index::Phase::Scanning => ("scanning", "scanning files".to_string()),
            code_intel_index::Phase::Indexing => ("indexing", format!("indexing {}/{} files", p.done, p.total)),
            // The same count as `indexing`, finished.
            code_intel_index::Phase::Done => ("indexing", "chunking done".to_string()),
        };
        let last = p.done == p.total;
        #[allow(clippy::cast_precision_loss)] // file counts are far below 2^52
        self.send(phase, p.done as f64, (p.total > 0).then_some(p.total as f64), message, last);
    }

    /// Reports a phase without a count (`loading the embedding model`).
    pub fn note(&self, phase: &'static str, message: &str) {
        self.send(phase, 0.0, None, message.to_string(), true);
    }

    /// Reports embedding progress: `done` of `total` chunks of this
    /// request's pass.
    #[allow(clippy::cast_precision_loss)] // chunk counts are far below 2^52
    pub fn embedding(&self, done: usize, total: usize) {
        let message = if total == 0 { "embedding: every chunk has a vector".to_string() } else { format!("embedding {done}/{total} chunks") };
        self.send("embedding", done as f64, Some(total as f64), message, done == total);
    }

    /// Reports the progress of a pass that was under way before this
    /// request's (the request waits for it, then embeds what is left).
    #[allow(clippy::cast_precision_loss)] // chunk counts are far below 2^52
    pub fn earlier_embedding(&self, done: usize, total: usize) {
        self.send(
            "earlier embedding",
            done as f64,
            Some(total as f64),
            format!("embedding {done}/{total} chunks (a pass already under way)"),
            done == total,
        );
    }

    /// Sends one notification: at most one per [`PROGRESS_INTERVAL`] within a
    /// phase, but always the first of a phase and any marked `last`. `done`
    /// and `total` count within the phase; the phase starts where the
    /// previous one ended.
    fn send(&self, phase: &'static str, done: f64, total: Option<f64>, message: String, last: bool) {
        let Some(token) = self.token.clone() else { return };
        let Some((progress, total)) = self.state.lock().expect("progress lock").advance(phase, done, total, last, Instant::now())
        else {
            return;
        };
        let mut param = ProgressNotificationParam::new(token, progress).with_message(message);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Some(sender) = self.sender.lock().expect("progress lock").as_ref() {
            let _ = sender.send(param);
        }
    }

    /// Stops reporting and waits (briefly) until every queued notification
    /// is written, so none follows the response.
    pub async fn finish(&self) {
        drop(self.sender.lock().expect("progress lock").take());
        let task = self.drained.lock().expect("progress lock").take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(DRAIN_WAIT, task).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_count_on_and_repeats_are_throttled() {
        let mut sent = Sent::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(sent.advance("scanning", 0.0, None, false, at(0)), Some((0.0, None)));
        assert_eq!(sent.advance("indexing", 0.0, Some(10.0), false, at(1)), Some((0.0, Some(10.0))));
        assert_eq!(sent.advance("indexing", 5.0, Some(10.0), false, at(20)), None, "throttled");
        assert_eq!(sent.advance("indexing", 6.0, Some(10.0), false, at(150)), Some((6.0, Some(10.0))));
        assert_eq!(sent.advance("indexing", 10.0, Some(10.0), true, at(151)), Some((10.0, Some(10.0))), "the last always goes");
        // Embedding counts on from the files: 10 + chunks, total grows.
        assert_eq!(sent.advance("earlier embedding", 0.0, Some(40.0), false, at(152)), Some((10.0, Some(50.0))));
        assert_eq!(sent.advance("earlier embedding", 40.0, Some(40.0), true, at(160)), Some((50.0, Some(50.0))));
        assert_eq!(sent.advance("embedding", 0.0, Some(5.0), false, at(161)), Some((50.0, Some(55.0))));
        assert_eq!(sent.advance("embedding", 5.0, Some(5.0), true, at(162)), Some((55.0, Some(55.0))));
        // Never back, even if a phase reports less than before.
        assert_eq!(sent.advance("embedding", 2.0, Some(5.0), true, at(400)), Some((55.0, Some(55.0))));
    }
}
