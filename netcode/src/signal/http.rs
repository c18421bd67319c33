//! A blocking HTTP/1.1 client for the rendezvous's HTTP side (`GET /ice`, `GET /rooms/CODE`,
//! the identity and top routes), over a connection raced against lost SYNs: plain for a
//! `ws://` rendezvous, TLS (rustls) for a `wss://` one.
//!
//! A `wss://` rendezvous's certificate is checked against the web's roots (webpki's list) and
//! any certificates in the PEM file `SSL_CERT_FILE` names (a rendezvous with a certificate of
//! its own making, or a test's).

use std::io::{Read, Write};
use std::sync::{Arc, OnceLock};

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
    let (status, body) = http_request(server, "GET", path, None, timeout).map_err(|e| {
        let refused = e.kind() == std::io::ErrorKind::ConnectionRefused;
        SignalError::Unreachable { server: server.to_owned(), refused, reason: e.to_string() }
    })?;
    if status != 200 {
        return Err(fail(format!("HTTP {status}: {}", body.chars().take(200).collect::<String>())));
    }
    serde_json::from_str(&body).map_err(|e| fail(e.to_string()))
}

/// One HTTP/1.1 request (`method path`, with a JSON `body` if given) to the signalling
/// server at `server` (`ws://HOST[:PORT]` over plain TCP, `wss://HOST[:PORT]` over TLS): the
/// answer's status and body (at most 64 KiB). A refusal (nothing listens at the address)
/// comes back as [`std::io::ErrorKind::ConnectionRefused`].
pub fn http_request(
    server: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    timeout: std::time::Duration,
) -> std::io::Result<(u16, String)> {
    request_with(server, method, path, body, timeout, tls_config)
}

/// [`http_request`], with the TLS configuration `tls` gives (asked only for a `wss://` server).
fn request_with(
    server: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    timeout: std::time::Duration,
    tls: impl FnOnce() -> std::io::Result<Arc<rustls::ClientConfig>>,
) -> std::io::Result<(u16, String)> {
    use std::net::ToSocketAddrs;

    let fail = |reason: &str| std::io::Error::other(reason.to_owned());
    let (secure, rest) = match (server.strip_prefix("ws://"), server.strip_prefix("wss://")) {
        (Some(rest), _) => (false, rest),
        (_, Some(rest)) => (true, rest),
        _ => return Err(fail("a rendezvous is ws://HOST:PORT or wss://HOST:PORT")),
    };
    let authority = rest.trim_end_matches('/');
    let authority = authority.split('/').next().unwrap_or(authority);
    let (host, port) = split_authority(authority);
    let port = port.unwrap_or(if secure { 443 } else { 80 });
    let addr = (host, port).to_socket_addrs()?.next().ok_or_else(|| fail("the address resolves to nothing"))?;
    let stream = connect_racing(addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
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
    let answer = if secure {
        let name = rustls::pki_types::ServerName::try_from(host)
            .map_err(|e| fail(&format!("{host} is no name a certificate can carry: {e}")))?
            .to_owned();
        let connection = rustls::ClientConnection::new(tls()?, name).map_err(std::io::Error::other)?;
        exchange(rustls::StreamOwned::new(connection, stream), &request)?
    } else {
        exchange(stream, &request)?
    };
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| fail("no HTTP answer"))?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| fail("no HTTP status"))?;
    Ok((status, body.to_owned()))
}

/// `HOST[:PORT]` (an IPv6 address in brackets) as the host, without brackets, and the port.
fn split_authority(authority: &str) -> (&str, Option<u16>) {
    if let Some(rest) = authority.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        return (host, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port.parse().ok()),
        _ => (authority, None),
    }
}

/// Writes `request` and reads the answer until the server closes (at most 64 KiB). A TLS
/// server that closes without its `close_notify` still gave a whole answer when it said
/// that much (the answer is read whole or not at all: `Connection: close`).
fn exchange(mut stream: impl Read + Write, request: &str) -> std::io::Result<Vec<u8>> {
    stream.write_all(request.as_bytes())?;
    stream.flush()?;
    let mut answer = Vec::new();
    match stream.take(64 * 1024).read_to_end(&mut answer) {
        Ok(_) => Ok(answer),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => Ok(answer),
        Err(e) => Err(e),
    }
}

/// The TLS configuration for a `wss://` rendezvous: the web's roots and those of
/// `SSL_CERT_FILE`, made once.
fn tls_config() -> std::io::Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
                let path = std::path::PathBuf::from(file);
                let certs = read_pem(&path).map_err(|e| format!("SSL_CERT_FILE {}: {e}", path.display()))?;
                for cert in certs {
                    roots.add(cert).map_err(|e| format!("SSL_CERT_FILE {}: {e}", path.display()))?;
                }
            }
            client_config(roots).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(std::io::Error::other)
}

/// The certificates in the PEM file at `path`.
fn read_pem(path: &std::path::Path) -> std::io::Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_file_iter(path)
        .map_err(|e| std::io::Error::other(e.to_string()))?
        .map(|c| c.map_err(|e| std::io::Error::other(e.to_string())))
        .collect()
}

/// A TLS client trusting `roots`, on ring (the provider the WebRTC stack builds already).
fn client_config(roots: rustls::RootCertStore) -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    #[expect(deprecated, reason = "ring without post-quantum key exchange: aws-lc-rs would add a C build of its own")]
    let provider = rustls::crypto::ring::default_provider();
    Ok(Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
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

    /// A TLS server on loopback for `localhost`, answering one request with `answer`; its
    /// certificate, and the request it read come back.
    fn tls_server(
        answer: &'static str,
    ) -> (u16, rcgen::CertifiedKey<rcgen::KeyPair>, std::sync::mpsc::Receiver<String>) {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("a certificate");
        let cert = certified.cert.der().clone();
        let key = rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der()).expect("a key");
        #[expect(deprecated, reason = "the provider the client uses")]
        let provider = rustls::crypto::ring::default_provider();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("a server config");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let port = listener.local_addr().expect("an address").port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Ok((stream, _)) = listener.accept() else { return };
            let Ok(connection) = rustls::ServerConnection::new(Arc::new(config)) else { return };
            let mut tls = rustls::StreamOwned::new(connection, stream);
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") && tls.read(&mut byte).is_ok_and(|n| n == 1) {
                request.push(byte[0]);
            }
            let _ = tx.send(String::from_utf8_lossy(&request).into_owned());
            let _ = tls.write_all(answer.as_bytes());
            tls.conn.send_close_notify();
            let _ = tls.flush();
        });
        (port, certified, rx)
    }

    #[test]
    fn a_wss_rendezvous_is_asked_over_tls_and_its_certificate_checked() {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"peers\":2}";
        let (port, certified, asked) = tls_server(answer);
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certified.cert.der().clone()).expect("a root");
        let trusting = || client_config(roots).map_err(std::io::Error::other);
        let server = format!("wss://localhost:{port}");
        let (status, body) =
            request_with(&server, "GET", "/rooms/K7MP2Q", None, Duration::from_secs(10), trusting).expect("answered");
        assert_eq!((status, body.as_str()), (200, "{\"peers\":2}"));
        let request = asked.recv_timeout(Duration::from_secs(10)).expect("the server read a request");
        assert!(request.starts_with("GET /rooms/K7MP2Q HTTP/1.1\r\nHost: localhost:"), "{request}");

        // A certificate nobody vouches for is refused: nothing is sent in the clear.
        let (port, _certified, asked) = tls_server(answer);
        let web_only = || {
            client_config(rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
                .map_err(std::io::Error::other)
        };
        let server = format!("wss://localhost:{port}");
        let refused = request_with(&server, "GET", "/rooms/K7MP2Q", None, Duration::from_secs(10), web_only);
        assert!(refused.is_err(), "{refused:?}");
        assert!(asked.recv_timeout(Duration::from_secs(10)).is_ok_and(|r| r.is_empty()), "no request got through");
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(split_authority("203.0.113.5:3536"), ("203.0.113.5", Some(3536)));
        assert_eq!(split_authority("rdv.example"), ("rdv.example", None));
        assert_eq!(split_authority("[2001:db8::1]:443"), ("2001:db8::1", Some(443)));
        assert_eq!(split_authority("[2001:db8::1]"), ("2001:db8::1", None));
    }

    #[test]
    fn an_unknown_scheme_is_refused_before_any_connection() {
        let e = http_request("http://127.0.0.1:1", "GET", "/ice", None, Duration::from_secs(1)).expect_err("refused");
        assert!(e.to_string().contains("ws://HOST:PORT or wss://HOST:PORT"), "{e}");
    }
}
