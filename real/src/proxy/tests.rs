use super::*;

/// A length-prefixed message.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn request(xid: i32, op: i32) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&op.to_be_bytes());
    body.extend_from_slice(b"payload");
    frame(&body)
}

fn reply(xid: i32, zxid: i64, err: i32) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&zxid.to_be_bytes());
    body.extend_from_slice(&err.to_be_bytes());
    frame(&body)
}

async fn read_one(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let len = stream.read_i32().await?;
    let mut body = vec![0; len as usize];
    stream.read_exact(&mut body).await?;
    Ok(frame(&body))
}

/// A fake server answering the connect frame with "hello" and each request with a reply
/// carrying its xid and zxid 100 + xid. Returns its address.
async fn fake_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                if read_one(&mut s).await.is_err() {
                    return;
                }
                s.write_all(&frame(b"hello")).await.unwrap();
                while let Ok(req) = read_one(&mut s).await {
                    let xid = be_i32(&req[4..8]);
                    if s.write_all(&reply(xid, 100 + i64::from(xid), 0))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    addr
}

async fn connected(proxy: &Proxy) -> TcpStream {
    let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
    c.write_all(&frame(b"connect")).await.unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), frame(b"hello"));
    c
}

const STEP: Duration = Duration::from_secs(5);

/// A ConnectRequest resuming `session` (0: a new session).
fn connect_request(session: i64) -> Vec<u8> {
    let mut body = 0i32.to_be_bytes().to_vec();
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend_from_slice(&4_000i32.to_be_bytes());
    body.extend_from_slice(&session.to_be_bytes());
    body.extend_from_slice(&16i32.to_be_bytes());
    body.extend_from_slice(&[0; 17]);
    frame(&body)
}

/// Whether the fake server's answer to a ConnectRequest for `session` comes back.
async fn answered(proxy: &Proxy, session: i64) -> bool {
    let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
    c.write_all(&connect_request(session)).await.unwrap();
    let answer = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    answer.is_ok_and(|a| a == frame(b"hello"))
}

/// What a client sends after its connection was cut never reaches the server, though
/// the connection's task may not have seen the cut yet when the message is read (a
/// CloseSession slipping through would end the server's wait for a session declared
/// expired or crashed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_sent_after_a_cut_reaches_the_server() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (heard, mut server_heard) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let heard = heard.clone();
            tokio::spawn(async move {
                while let Ok(message) = read_one(&mut s).await {
                    let _ = heard.send(message);
                }
            });
        }
    });
    let proxy = Proxy::start(addr).await.unwrap();
    for round in 0..200 {
        let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
        c.write_all(&frame(b"connect")).await.unwrap();
        let first = tokio::time::timeout(STEP, server_heard.recv()).await;
        assert_eq!(first.unwrap(), Some(frame(b"connect")));
        proxy.cut_all();
        // A CloseSession (op -11), sent once the cut was made.
        let _ = c.write_all(&request(round, -11)).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            server_heard.try_recv().is_err(),
            "round {round}: a message sent after the cut reached the server"
        );
    }
}

#[tokio::test]
async fn forwards_requests_and_replies() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut c = connected(&proxy).await;
    c.write_all(&request(7, 4)).await.unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(7, 107, 0));
    assert_eq!(proxy.open_connections(), 1);
}

#[tokio::test]
async fn withholds_the_next_create_reply_and_cuts() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut c = connected(&proxy).await;
    proxy.lose_next_create_response();
    // A non-create passes untouched.
    c.write_all(&request(1, 4)).await.unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(1, 101, 0));
    c.write_all(&request(2, 15)).await.unwrap();
    let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    assert!(end.is_err(), "expected the connection cut, got {end:?}");
    assert_eq!(
        proxy.lost_replies(),
        vec![LostReply {
            xid: 2,
            op: 15,
            zxid: 102,
            err: 0
        }]
    );
    // One-shot: the next connection's creates go through.
    let mut c = connected(&proxy).await;
    c.write_all(&request(3, 1)).await.unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(3, 103, 0));
}

/// A create2 request for `path`.
fn create_request(xid: i32, path: &str) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&15i32.to_be_bytes());
    body.extend_from_slice(&(path.len() as i32).to_be_bytes());
    body.extend_from_slice(path.as_bytes());
    body.extend_from_slice(b"rest of the request");
    frame(&body)
}

#[tokio::test]
async fn a_lost_create_under_a_prefix_lets_other_creates_pass() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut c = connected(&proxy).await;
    proxy.lose_next_create_response_under("/locks/");
    c.write_all(&create_request(1, "/locks")).await.unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(1, 101, 0));
    c.write_all(&create_request(2, "/locks/n-")).await.unwrap();
    let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    assert!(end.is_err(), "expected the connection cut, got {end:?}");
    assert_eq!(proxy.lost_replies().len(), 1);
    assert_eq!(proxy.lost_replies()[0].xid, 2);
}

/// A request of op `op` for `path`.
fn path_request(xid: i32, op: i32, path: &str) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&op.to_be_bytes());
    body.extend_from_slice(&(path.len() as i32).to_be_bytes());
    body.extend_from_slice(path.as_bytes());
    body.extend_from_slice(&(-1i32).to_be_bytes());
    frame(&body)
}

#[tokio::test]
async fn an_aimed_fault_withholds_the_next_delete_reply_under_its_path_and_cuts() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut c = connected(&proxy).await;
    proxy.aim(AimedFault::new(
        op::by_name("delete").unwrap(),
        "/locks/",
        AimedAction::WithholdReply,
    ));
    // Another op under the path, and a delete elsewhere, pass.
    c.write_all(&path_request(1, op::GET_CHILDREN2, "/locks/x"))
        .await
        .unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(1, 101, 0));
    c.write_all(&path_request(2, op::DELETE, "/other/x"))
        .await
        .unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(2, 102, 0));
    c.write_all(&path_request(3, op::DELETE, "/locks/n-0001"))
        .await
        .unwrap();
    let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    assert!(end.is_err(), "expected the connection cut, got {end:?}");
    assert_eq!(
        proxy.caught_requests(),
        vec![CaughtRequest {
            op: op::DELETE,
            path: "/locks/n-0001".into(),
            action: AimedAction::WithholdReply,
            err: Some(0),
            session: 0,
        }]
    );
    // One-shot.
    let mut c = connected(&proxy).await;
    c.write_all(&path_request(4, op::DELETE, "/locks/n-0002"))
        .await
        .unwrap();
    assert_eq!(read_one(&mut c).await.unwrap(), reply(4, 104, 0));
}

#[tokio::test]
async fn an_aimed_fault_skips_its_ordinal_then_strikes_the_next_n_and_logs_every_request() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut fault = AimedFault::new(
        op::by_name("delete").unwrap(),
        "/locks/",
        AimedAction::DropRequest,
    );
    fault.skip = 1;
    fault.repeat = Repeat::Next(2);
    proxy.aim(fault);
    let mut answered = Vec::new();
    for xid in 1..=4 {
        let mut c = connected(&proxy).await;
        c.write_all(&path_request(xid, op::DELETE, &format!("/locks/n-{xid}")))
            .await
            .unwrap();
        let got = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        answered.push(got.is_ok());
    }
    // The first passes (skipped), the next two are dropped, the fourth passes.
    assert_eq!(answered, [true, false, false, true]);
    let (seen, beyond) = proxy.requests_seen();
    let paths: Vec<&str> = seen.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/locks/n-1", "/locks/n-2", "/locks/n-3", "/locks/n-4"]
    );
    assert_eq!(beyond, 0);
}

#[tokio::test]
async fn an_aimed_drop_never_reaches_the_server() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (heard, mut server_heard) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let heard = heard.clone();
            tokio::spawn(async move {
                while let Ok(message) = read_one(&mut s).await {
                    let _ = heard.send(message);
                }
            });
        }
    });
    let proxy = Proxy::start(addr).await.unwrap();
    proxy.aim(AimedFault::new(
        op::by_name("create").unwrap(),
        "/locks/",
        AimedAction::DropRequest,
    ));
    let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
    c.write_all(&frame(b"connect")).await.unwrap();
    let first = tokio::time::timeout(STEP, server_heard.recv()).await;
    assert_eq!(first.unwrap(), Some(frame(b"connect")));
    c.write_all(&create_request(1, "/locks/n-")).await.unwrap();
    let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    assert!(end.is_err(), "expected the connection cut, got {end:?}");
    assert!(
        server_heard.try_recv().is_err(),
        "the dropped create reached the server"
    );
    assert_eq!(proxy.caught_requests().len(), 1);
    assert_eq!(proxy.caught_requests()[0].err, None);
}

/// A fake server whose ConnectResponse names session `session`; it answers nothing
/// else. Returns its address.
async fn fake_server_of_session(session: i64) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                if read_one(&mut s).await.is_err() {
                    return;
                }
                let mut body = 0i32.to_be_bytes().to_vec();
                body.extend_from_slice(&4_000i32.to_be_bytes());
                body.extend_from_slice(&session.to_be_bytes());
                s.write_all(&frame(&body)).await.unwrap();
                while read_one(&mut s).await.is_ok() {}
            });
        }
    });
    addr
}

/// A create request of `path` with `flags`, as ZooKeeper's client writes it: the path,
/// the data, an ACL of one entry, the flags.
fn create_with_flags(xid: i32, path: &str, flags: i32) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&op::CREATE2.to_be_bytes());
    for bytes in [path.as_bytes(), b"data"] {
        body.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        body.extend_from_slice(bytes);
    }
    body.extend_from_slice(&1i32.to_be_bytes());
    body.extend_from_slice(&31i32.to_be_bytes());
    for text in ["world", "anyone"] {
        body.extend_from_slice(&(text.len() as i32).to_be_bytes());
        body.extend_from_slice(text.as_bytes());
    }
    body.extend_from_slice(&flags.to_be_bytes());
    frame(&body)
}

/// A server of session 9 that answers a create with the path asked plus a sequence,
/// and anything else with an empty reply.
async fn naming_server() -> SocketAddr {
    naming_server_answering_deletes(true).await.0
}

/// [`naming_server`], silent on deletes unless `deletes`; with the count of deletes
/// it received.
async fn naming_server_answering_deletes(
    deletes: bool,
) -> (SocketAddr, Arc<std::sync::atomic::AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let count = Arc::clone(&received);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                if read_one(&mut s).await.is_err() {
                    return;
                }
                let mut body = 0i32.to_be_bytes().to_vec();
                body.extend_from_slice(&4_000i32.to_be_bytes());
                body.extend_from_slice(&9i64.to_be_bytes());
                s.write_all(&frame(&body)).await.unwrap();
                while let Ok(req) = read_one(&mut s).await {
                    let xid = be_i32(&req[4..8]);
                    if be_i32(&req[8..12]) == op::DELETE {
                        count.fetch_add(1, Ordering::AcqRel);
                        if !deletes {
                            continue;
                        }
                    }
                    let mut body = reply(xid, 1, 0)[LENGTH_BYTES..].to_vec();
                    if be_i32(&req[8..12]) == op::CREATE2 {
                        let path = format!("{}0000000001", created_path(&req[4..]).unwrap());
                        body.extend_from_slice(&(path.len() as i32).to_be_bytes());
                        body.extend_from_slice(path.as_bytes());
                    }
                    if s.write_all(&frame(&body)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, received)
}

/// A client connected through `proxy`, its session's handshake answered.
async fn session_through(proxy: &Proxy) -> TcpStream {
    let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
    c.write_all(&connect_request(0)).await.unwrap();
    read_one(&mut c).await.unwrap();
    c
}

/// The proxy reads the node a create made from its reply, only for an ephemeral
/// create, and each delete answered ok; each reply dates its session's last answer.
#[tokio::test]
async fn ephemeral_creates_and_deletes_are_seen_in_their_replies() {
    let proxy = Proxy::start(naming_server().await).await.unwrap();
    let mut c = session_through(&proxy).await;
    c.write_all(&create_with_flags(1, "/l/n-", 3))
        .await
        .unwrap();
    c.write_all(&create_with_flags(2, "/l/persistent-", 2))
        .await
        .unwrap();
    c.write_all(&path_request(3, op::DELETE, "/l/n-0000000001"))
        .await
        .unwrap();
    for _ in 0..3 {
        read_one(&mut c).await.unwrap();
    }
    let (changes, beyond) = proxy.node_changes();
    let seen: Vec<(&str, i64, bool)> = changes
        .iter()
        .map(|c| (c.path.as_str(), c.session, c.deleted))
        .collect();
    assert_eq!(
        seen,
        [("/l/n-0000000001", 9, false), ("/l/n-0000000001", 9, true)]
    );
    assert_eq!(beyond, 0);
    let answered = proxy.sessions_answered();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].0, 9);
    assert!(answered[0].1 >= changes[1].at);
}

/// A delete sent on whose reply never came (its client hung up first, as one does
/// after a held request timed it out) counts as a deletion when the connection ends:
/// the server may well have applied it, and a node is never called leaked on the
/// proxy's word alone. A delete dropped before the server saw it does not count.
#[tokio::test]
async fn a_delete_sent_whose_reply_never_came_counts_as_a_deletion_a_dropped_one_not() {
    for dropped in [false, true] {
        let (server, received) = naming_server_answering_deletes(false).await;
        let proxy = Proxy::start(server).await.unwrap();
        if dropped {
            proxy.aim(AimedFault::new(
                &[op::DELETE],
                "/l/",
                AimedAction::DropRequest,
            ));
        }
        let mut c = session_through(&proxy).await;
        c.write_all(&create_with_flags(1, "/l/n-", 3))
            .await
            .unwrap();
        read_one(&mut c).await.unwrap();
        c.write_all(&path_request(2, op::DELETE, "/l/n-0000000001"))
            .await
            .unwrap();
        // Until the server has the delete, or the proxy dropped it and cut.
        let deadline = tokio::time::Instant::now() + STEP;
        while received.load(Ordering::Acquire) == 0 && proxy.caught_requests().is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the delete never came"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(c);
        let deadline = tokio::time::Instant::now() + STEP;
        while proxy.open_connections() > 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the connection never ended"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let seen: Vec<(String, bool)> = proxy
            .node_changes()
            .0
            .into_iter()
            .map(|c| (c.path, c.deleted))
            .collect();
        let made = ("/l/n-0000000001".to_owned(), false);
        let deleted = ("/l/n-0000000001".to_owned(), true);
        match dropped {
            false => assert_eq!(seen, [made, deleted]),
            true => assert_eq!(seen, [made], "a dropped delete counted"),
        }
    }
}

#[tokio::test]
async fn an_aimed_expiry_drops_the_request_and_refuses_its_session_until_lifted() {
    let proxy = Proxy::start(fake_server_of_session(77).await)
        .await
        .unwrap();
    proxy.aim(AimedFault::new(
        op::by_name("get-children").unwrap(),
        "/locks",
        AimedAction::Expire,
    ));
    let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
    c.write_all(&connect_request(0)).await.unwrap();
    let answer = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    assert_eq!(answer.unwrap().len(), 4 + 16);
    c.write_all(&path_request(1, op::GET_CHILDREN2, "/locks"))
        .await
        .unwrap();
    let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
    assert!(end.is_err(), "expected the connection cut, got {end:?}");
    let caught = proxy.caught_requests();
    assert_eq!(caught.len(), 1);
    assert_eq!(
        (caught[0].action, caught[0].session, caught[0].err),
        (AimedAction::Expire, 77, None)
    );
    let addr = proxy.local_addr();
    let reconnect = |session: i64| async move {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(&connect_request(session)).await.unwrap();
        let answer = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        answer.is_ok()
    };
    assert!(!reconnect(77).await, "the expired session reconnected");
    assert!(reconnect(0).await, "a new session was refused");
    proxy.lift_refusal(77);
    assert!(reconnect(77).await, "the refusal was not lifted");
}

#[tokio::test]
async fn black_hole_holds_traffic_until_healed() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut c = connected(&proxy).await;
    proxy.black_hole();
    c.write_all(&request(1, 4)).await.unwrap();
    let held = tokio::time::timeout(Duration::from_millis(300), read_one(&mut c)).await;
    assert!(held.is_err(), "a reply crossed the black hole");
    proxy.heal();
    let reply_after = tokio::time::timeout(STEP, read_one(&mut c))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply_after, reply(1, 101, 0));
}

#[tokio::test]
async fn timed_black_hole_heals_by_itself() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    proxy.black_hole_for(Duration::from_millis(200));
    assert!(proxy.is_black_holed());
    // Connecting during the black hole waits for the heal.
    let c = tokio::time::timeout(STEP, connected(&proxy)).await.unwrap();
    drop(c);
    assert!(!proxy.is_black_holed());
}

#[tokio::test]
async fn cut_all_closes_current_connections_only() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    let mut old = connected(&proxy).await;
    assert_eq!(proxy.cut_all(), 1);
    let end = tokio::time::timeout(STEP, read_one(&mut old))
        .await
        .unwrap();
    assert!(end.is_err());
    let mut new = connected(&proxy).await;
    new.write_all(&request(9, 3)).await.unwrap();
    assert_eq!(read_one(&mut new).await.unwrap(), reply(9, 109, 0));
}

#[tokio::test]
async fn a_refused_session_cannot_reconnect_until_its_deadline() {
    let proxy = Proxy::start(fake_server().await).await.unwrap();
    proxy.refuse_session_for(0x1234, Duration::from_millis(400));
    proxy.refuse_session_for(0, STEP);
    assert!(
        !answered(&proxy, 0x1234).await,
        "a refused session got through"
    );
    assert!(answered(&proxy, 0x99).await, "another session was refused");
    assert!(answered(&proxy, 0).await, "a new session was refused");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(answered(&proxy, 0x1234).await, "refused past its deadline");
}

#[tokio::test]
async fn oversized_frames_and_extra_connections_are_refused() {
    let limits = ProxyLimits {
        max_connections: 1,
        max_frame_bytes: 64,
        ..ProxyLimits::default()
    };
    let proxy = Proxy::start_with(fake_server().await, limits)
        .await
        .unwrap();
    let mut first = connected(&proxy).await;
    let mut second = TcpStream::connect(proxy.local_addr()).await.unwrap();
    let mut buf = [0; 1];
    let refused = tokio::time::timeout(STEP, second.read(&mut buf))
        .await
        .unwrap();
    assert!(
        matches!(refused, Ok(0) | Err(_)),
        "extra connection was served"
    );
    first.write_all(&frame(&[0; 65])).await.unwrap();
    let end = tokio::time::timeout(STEP, read_one(&mut first))
        .await
        .unwrap();
    assert!(end.is_err(), "oversized frame was forwarded");
}
