//! The stdio transport, with the real stdout reserved for MCP messages.
//!
//! Some dependencies `println!` on error paths; one stray line on stdout
//! breaks the JSON-RPC stream. So the process's stdout is duplicated for the
//! transport, and file descriptor 1 is then pointed at stderr: anything else
//! that writes to "stdout" lands in the log stream instead.

//!
//! Between the pipes and the MCP library sit a [`GuardedReader`], which
//! checks every incoming line and answers the malformed ones itself
//! ([`super::jsonrpc`]), and a [`LineWriter`]: both hand whole lines to one
//! task that owns stdout, so a reply of the guard never lands in the middle
//! of a message of the library.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::jsonrpc::{self, MAX_MESSAGE_BYTES, Verdict};

/// Reader half of the MCP channel.
pub struct McpReader(Box<dyn AsyncRead + Send + Unpin>);
/// Writer half of the MCP channel (the original stdout).
pub struct McpWriter(Box<dyn AsyncWrite + Send + Unpin>);

impl AsyncRead for McpReader {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for McpWriter {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// Takes over stdin/stdout for MCP and redirects file descriptor 1 to
/// stderr. Must run inside a Tokio runtime.
///
/// # Errors
/// When the descriptors cannot be duplicated.
#[cfg(unix)]
pub fn take_stdio() -> std::io::Result<(McpReader, McpWriter)> {
    use std::os::fd::AsRawFd;

    let transport_out = rustix::io::dup(std::io::stdout())?;
    rustix::stdio::dup2_stdout(std::io::stderr())?;

    // Pipes (how MCP clients launch servers) go through Tokio's non-blocking
    // pipe driver, on a private open file description so the O_NONBLOCK flag
    // never leaks to the client's end; anything else (a file, a terminal)
    // uses the blocking-pool handles.
    let writer: Box<dyn AsyncWrite + Send + Unpin> = match tokio::net::unix::pipe::OpenOptions::new()
        .open_sender(format!("/proc/self/fd/{}", transport_out.as_raw_fd()))
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::fs::File::from_std(std::fs::File::from(transport_out))),
    };
    let reader: Box<dyn AsyncRead + Send + Unpin> =
        match tokio::net::unix::pipe::OpenOptions::new().open_receiver("/proc/self/fd/0") {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
    Ok((McpReader(reader), McpWriter(writer)))
}

/// Non-Unix platforms: the plain stdio handles.
///
/// # Errors
/// Never.
#[cfg(not(unix))]
pub fn take_stdio() -> std::io::Result<(McpReader, McpWriter)> {
    Ok((McpReader(Box::new(tokio::io::stdin())), McpWriter(Box::new(tokio::io::stdout()))))
}

/// Reads incoming lines, keeps at most [`MAX_MESSAGE_BYTES`] of one, and
/// passes on only the well-formed messages; the others are answered
/// through the reply channel ([`jsonrpc::check_line`]).
pub struct GuardedReader {
    inner: McpReader,
    /// The line being read (without its newline).
    line: Vec<u8>,
    /// The rest of an oversized line is being skipped.
    discarding: bool,
    /// Checked lines not yet handed on, and how far they were.
    ready: Vec<u8>,
    ready_at: usize,
    chunk: Vec<u8>,
    eof: bool,
    replies: UnboundedSender<Vec<u8>>,
}

impl GuardedReader {
    fn finish_line(&mut self) {
        if self.discarding {
            self.discarding = false;
            let _ = self.replies.send(jsonrpc::oversized());
        } else {
            match jsonrpc::check_line(&self.line) {
                Verdict::Forward => {
                    self.ready.extend_from_slice(&self.line);
                    self.ready.push(b'\n');
                }
                Verdict::Reply(reply) => {
                    let _ = self.replies.send(reply);
                }
                Verdict::Ignore => {}
            }
        }
        self.line.clear();
        if self.line.capacity() > 1 << 20 {
            self.line.shrink_to(64 * 1024); // one huge message keeps no memory
        }
    }

    fn take_bytes(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = rest.iter().position(|b| *b == b'\n');
            let piece = &rest[..newline.unwrap_or(rest.len())];
            if !self.discarding {
                if self.line.len() + piece.len() > MAX_MESSAGE_BYTES {
                    self.line.clear();
                    self.discarding = true;
                } else {
                    self.line.extend_from_slice(piece);
                }
            }
            match newline {
                Some(at) => {
                    self.finish_line();
                    rest = &rest[at + 1..];
                }
                None => break,
            }
        }
    }
}

impl AsyncRead for GuardedReader {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.ready_at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.ready_at);
                buf.put_slice(&this.ready[this.ready_at..this.ready_at + n]);
                this.ready_at += n;
                if this.ready_at == this.ready.len() {
                    this.ready.clear();
                    this.ready_at = 0;
                    if this.ready.capacity() > 1 << 20 {
                        this.ready.shrink_to(64 * 1024);
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.chunk);
            let mut read = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let n = read.filled().len();
            match polled {
                Poll::Pending => {
                    this.chunk = chunk;
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => {
                    this.chunk = chunk;
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(())) if n == 0 => {
                    // The client closed its end: a last line without a
                    // newline is still a message.
                    if !this.line.is_empty() || this.discarding {
                        this.finish_line();
                    }
                    this.eof = true;
                }
                Poll::Ready(Ok(())) => this.take_bytes(&chunk[..n]),
            }
            this.chunk = chunk;
        }
    }
}

/// The writer the MCP library gets: it collects bytes into lines and sends
/// each whole line to the task that owns stdout.
pub struct LineWriter {
    pending: Vec<u8>,
    lines: UnboundedSender<Vec<u8>>,
}

impl LineWriter {
    fn send_lines(&mut self) -> std::io::Result<()> {
        while let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
            let rest = self.pending.split_off(at + 1);
            let line = std::mem::replace(&mut self.pending, rest);
            self.lines.send(line).map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }
}

impl AsyncWrite for LineWriter {
    fn poll_write(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.pending.extend_from_slice(buf);
        Poll::Ready(self.send_lines().map(|()| buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            let _ = self.lines.send(line);
        }
        Poll::Ready(Ok(()))
    }
}

/// Puts the guard between the pipes and the MCP library: returns the reader
/// and writer to give the library, and the task writing stdout, which ends
/// once both are dropped and every line is written. Must run inside a Tokio
/// runtime.
pub fn guard(reader: McpReader, mut writer: McpWriter) -> (GuardedReader, LineWriter, tokio::task::JoinHandle<()>) {
    let (lines, mut outgoing) = unbounded_channel::<Vec<u8>>();
    let task = tokio::spawn(async move {
        while let Some(line) = outgoing.recv().await {
            if writer.write_all(&line).await.is_err() {
                break;
            }
            // Everything already queued goes out before the flush.
            while let Ok(more) = outgoing.try_recv() {
                if writer.write_all(&more).await.is_err() {
                    return;
                }
            }
            if writer.flush().await.is_err() {
                break;
            }
        }
    });
    let reader = GuardedReader {
        inner: reader,
        line: Vec::new(),
        discarding: false,
        ready: Vec::new(),
        ready_at: 0,
        chunk: vec![0; 64 * 1024],
        eof: false,
        replies: lines.clone(),
    };
    (reader, LineWriter { pending: Vec::new(), lines }, task)
}
