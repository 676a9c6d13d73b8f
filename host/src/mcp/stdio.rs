//! The stdio transport, with the real stdout reserved for MCP messages.
//!
//! Some dependencies `println!` on error paths; one stray line on stdout
//! breaks the JSON-RPC stream. So the process's stdout is duplicated for the
//! transport, and file descriptor 1 is then pointed at stderr: anything else
//! that writes to "stdout" lands in the log stream instead.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
