//! A blocking HTTP/1.1 client for the rendezvous's HTTP side (`GET /ice`, `GET /rooms/CODE`,
//! the identity and top routes), over a connection raced against lost SYNs.

use super::SignalError;

/// How long a connection attempt to the signalling server waits before another one starts
/// beside it (see [`connect_racing`]).
const CONNECT_STAGGER: std::time::Duration = std::time::Duration::from_millis(250);

/// Connects to `addr`, starting another attempt beside the ones still waiting every
/// [`CONNECT_STAGGER`] until one connects or `timeout` runs out. A lost SYN or SYN-ACK costs
/// TCP its initial retransmission timeout, 1 s (then 2 s, 4 s): on a line that loses 2 % each
/// way that was one join in a dozen waiting a second or more before anything else began.
fn connect_racing(addr: std::net::SocketAddr, timeout: std::time::Duration) -> std::io::Result<std::net::TcpStream> {
    use std::sync::mpsc;
    let deadline = std::time::Instant::now() + timeout;
    let (tx, rx) = mpsc::channel();
    let mut attempts = 0;
    let mut last_error = None;
    loop {
        let now = std::time::Instant::now();
        if now < deadline {
            let tx = tx.clone();
            let left = deadline - now;
            attempts += 1;
            // A losing attempt that connects later is dropped, which closes it.
            std::thread::spawn(move || {
                let _ = tx.send(std::net::TcpStream::connect_timeout(&addr, left));
            });
        }
        let wait = CONNECT_STAGGER.min(deadline.saturating_duration_since(std::time::Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => {
                attempts -= 1;
                // Refused or unreachable at once: no use trying again and again.
                if attempts == 0 {
                    return Err(e);
                }
                last_error = Some(e);
            }
            Err(mpsc::RecvTimeoutError::Timeout) if std::time::Instant::now() < deadline => {}
            Err(_) => {
                return Err(last_error.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut)));
            }
        }
    }
}

/// `GET path` on the signalling server's HTTP side, its JSON answer parsed.
pub(super) fn http_get<T: serde::de::DeserializeOwned>(
    server: &str,
    path: &str,
    what: &str,
    timeout: std::time::Duration,
) -> Result<T, SignalError> {
    let fail = |reason: String| SignalError::Serve(format!("fetching {what} from {server}: {reason}"));
    let (status, body) = http_request(server, "GET", path, None, timeout).map_err(|e| fail(e.to_string()))?;
    if status != 200 {
        return Err(fail(format!("HTTP {status}: {}", body.chars().take(200).collect::<String>())));
    }
    serde_json::from_str(&body).map_err(|e| fail(e.to_string()))
}

/// One HTTP/1.1 request (`method path`, with a JSON `body` if given) to the signalling
/// server at `server` (`ws://HOST:PORT`): the answer's status and body (at most 64 KiB).
pub fn http_request(
    server: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    timeout: std::time::Duration,
) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;

    let fail = |reason: &str| std::io::Error::other(reason.to_owned());
    let authority = server
        .strip_prefix("ws://")
        .ok_or_else(|| fail("only ws:// signalling servers serve it over plain HTTP"))?
        .trim_end_matches('/');
    let authority = authority.split('/').next().unwrap_or(authority);
    let addr = authority.to_socket_addrs()?.next().ok_or_else(|| fail("the address resolves to nothing"))?;
    let mut stream = connect_racing(addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    // One segment, sent at once: `write!` straight to the socket wrote each piece of the
    // format on its own, and Nagle's algorithm held each after the first for the server's
    // delayed ACK, a round trip and more before every join.
    stream.set_nodelay(true)?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    match body {
        Some(body) => {
            request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()));
            request.push_str(body);
        }
        None if method != "GET" => request.push_str("Content-Length: 0\r\n\r\n"),
        None => request.push_str("\r\n"),
    }
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| fail("no HTTP answer"))?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| fail("no HTTP status"))?;
    Ok((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_racing_connect_reaches_a_listener_and_a_refusal_ends_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("an address");
        let stream = connect_racing(addr, Duration::from_secs(10)).expect("connects");
        assert_eq!(stream.peer_addr().expect("a peer"), addr);
        let (_accepted, from) = listener.accept().expect("accepts");
        assert_eq!(from, stream.local_addr().expect("an address"));
        // Nothing listens there any more: refused, not waited for until the timeout.
        drop(listener);
        let refused = connect_racing(addr, Duration::from_secs(3600)).expect_err("nothing listens");
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}
