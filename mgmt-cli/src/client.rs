//! A blocking client for the management socket.

use crate::api::{Reply, Request, Response};
use crate::codec;
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
        self.writer.write_all(&codec::encode(request)?)?;
        let mut count = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut self.reader).take(codec::MAX_LINE as u64).read_until(b'\n', &mut line)?;
            if read == 0 {
                return Err(ClientError::Closed);
            }
            match codec::decode::<Response>(&line)? {
                Response::Ok { reply: Reply::IpRoutes(routes) } if routes.is_empty() => return Ok(count),
                Response::Ok { reply: Reply::IpRoutes(routes) } => {
                    count += routes.len();
                    chunk(routes)?;
                }
                Response::Ok { reply } => return Err(ClientError::Server(format!("unexpected answer {reply:?}"))),
                Response::Error { message } => return Err(ClientError::Server(message)),
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
