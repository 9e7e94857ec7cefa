//! A blocking client for the management socket.

use crate::api::{Reply, Request, Response};
use crate::codec;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {path}: {source}")]
    Connect { path: PathBuf, source: std::io::Error },
    #[error("management socket I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("malformed answer from switchd: {0}")]
    Protocol(#[from] serde_json::Error),
    #[error("switchd closed the connection without answering")]
    Closed,
    #[error("switchd: {0}")]
    Server(String),
    /// Writing the answer out failed (the reader of a stream left).
    #[error("output: {0}")]
    Output(std::io::Error),
}

/// One line of a streamed route table, its routes left as raw JSON:
/// `{"status":"ok","reply":{"kind":"ip_routes","data":[ROUTE,...]}}`.
#[derive(Deserialize)]
struct RawRoutesAnswer<'a> {
    #[serde(borrow)]
    reply: RawReply<'a>,
}

#[derive(Deserialize)]
struct RawReply<'a> {
    kind: &'a str,
    #[serde(borrow)]
    data: Vec<&'a RawValue>,
}

pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    /// How long one request may wait for its answer.
    pub const TIMEOUT: Duration = Duration::from_secs(10);

    pub fn connect(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let stream =
            UnixStream::connect(path).map_err(|source| ClientError::Connect { path: path.to_owned(), source })?;
        stream.set_read_timeout(Some(Self::TIMEOUT))?;
        stream.set_write_timeout(Some(Self::TIMEOUT))?;
        let writer = stream.try_clone()?;
        Ok(Client { reader: BufReader::new(stream), writer })
    }

    /// Sends a streamed request ([`Request::StreamIpRoute`]) and hands
    /// each chunk of routes to `chunk` as it arrives; the number of routes.
    pub fn stream_ip_routes(
        &mut self,
        request: &Request,
        mut chunk: impl FnMut(Vec<crate::api::IpRoute>) -> std::io::Result<()>,
    ) -> Result<usize, ClientError> {
        self.stream_raw_ip_routes(request, |raw| {
            let routes = raw.iter().map(|r| serde_json::from_str(r.get())).collect::<Result<Vec<_>, _>>()?;
            chunk(routes)
        })
    }

    /// As [`Client::stream_ip_routes`], but each route is handed over as
    /// the daemon encoded it, unparsed: `--json` copies the daemon's
    /// bytes through instead of decoding and encoding every route again.
    pub fn stream_raw_ip_routes(
        &mut self,
        request: &Request,
        mut chunk: impl FnMut(&[&RawValue]) -> std::io::Result<()>,
    ) -> Result<usize, ClientError> {
        self.writer.write_all(&codec::encode(request)?)?;
        let mut count = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut self.reader).take(codec::MAX_LINE as u64).read_until(b'\n', &mut line)?;
            if read == 0 {
                return Err(ClientError::Closed);
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            match serde_json::from_slice::<RawRoutesAnswer>(body) {
                Ok(answer) if answer.reply.kind == "ip_routes" => {
                    if answer.reply.data.is_empty() {
                        return Ok(count);
                    }
                    count += answer.reply.data.len();
                    chunk(&answer.reply.data)?;
                }
                // An error, or another answer: decoded whole to say which.
                _ => match codec::decode::<Response>(&line)? {
                    Response::Ok { reply } => return Err(ClientError::Server(format!("unexpected answer {reply:?}"))),
                    Response::Error { message } => return Err(ClientError::Server(message)),
                },
            }
        }
    }

    /// Sends one request and waits for its answer; a server-side error
    /// becomes [`ClientError::Server`].
    pub fn request(&mut self, request: &Request) -> Result<Reply, ClientError> {
        self.writer.write_all(&codec::encode(request)?)?;
        let mut line = Vec::new();
        let read = (&mut self.reader).take(codec::MAX_LINE as u64).read_until(b'\n', &mut line)?;
        if read == 0 {
            return Err(ClientError::Closed);
        }
        match codec::decode::<Response>(&line)? {
            Response::Ok { reply } => Ok(reply),
            Response::Error { message } => Err(ClientError::Server(message)),
        }
    }
}
