//! `KeyringStore` against real OS credential stores: a Secret Service (gnome-keyring-daemon on a
//! private D-Bus session bus, with its own HOME, so the real user's keyring is never touched)
//! and the kernel's keyutils.
//!
//! Every `tracing` event (and every `log` record, through tracing-log) is captured at TRACE
//! level, and the tests assert that no token or secret appears in it, in an error, or in any
//! file under the Secret Service's HOME.
//!
//! The Secret Service is `mcp_testkit::secret_service::SecretService` (shared with the `mcph`
//! OAuth interop tests). It needs `dbus-daemon`, `dbus-send` and `gnome-keyring-daemon`;
//! without them the test fails (run `cargo xtask interop-setup`).

#![cfg(all(feature = "keyring", target_os = "linux"))]

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use keyring_core::{CredentialStore, Entry};
use mcp_auth::store::{default_store, KeyringStore, StoreKey, TokenStore};
use mcp_auth::{ClientIdentity, Secret, StoredCredentials, TokenEndpointAuth, TokenSet, TokenType};
use mcp_testkit::secret_service::{self, SecretService, PROCESS_TIMEOUT};

// ---------------------------------------------------------------------------------------------
// Serialization, logs, unique values.
// ---------------------------------------------------------------------------------------------

/// The tests change `DBUS_SESSION_BUS_ADDRESS` (which the Secret Service store reads when it
/// connects), so they run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Everything logged in this process, at TRACE level.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// The process-wide capture (a global subscriber, so the store's worker threads log into it;
/// `try_init` also routes the `log` records of keyring-core and zbus into it).
fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(captured.clone())
            .try_init()
            .expect("install the capturing tracing subscriber");
        captured
    })
}

/// A value no other test run uses.
fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{nanos:x}-{n}", std::process::id())
}

/// Credentials with fresh, recognizable secrets (returned too, to look for them later).
fn credentials(tag: &str) -> (StoredCredentials, Vec<String>) {
    let access = unique(&format!("at-{tag}"));
    let refresh = unique(&format!("rt-{tag}"));
    let client_secret = unique(&format!("cs-{tag}"));
    let dpop_key = unique(&format!("dk-{tag}"));
    let creds = StoredCredentials {
        tokens: Some(TokenSet {
            access_token: Secret::new(access.clone()),
            token_type: TokenType::Dpop,
            refresh_token: Some(Secret::new(refresh.clone())),
            expires_at: Some(1_900_000_000),
            lifetime_secs: None,
            scopes: vec!["read".into(), "write".into()],
        }),
        client: Some(ClientIdentity {
            client_id: format!("client-{tag}"),
            client_secret: Some(Secret::new(client_secret.clone())),
            auth_method: TokenEndpointAuth::ClientSecretBasic,
            redirect_uri: Some("http://127.0.0.1:33418/callback".into()),
            issuer: Some("https://auth.example".into()),
        }),
        dpop_key: Some(Secret::new(dpop_key.clone())),
        generation: 0,
        logged_out: false,
    };
    (creds, vec![access, refresh, client_secret, dpop_key])
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}

/// Sets an environment variable and puts back the old value on drop (under [`serial`]).
struct EnvVar {
    name: &'static str,
    old: Option<std::ffi::OsString>,
}

impl EnvVar {
    fn set(name: &'static str, value: &str) -> EnvVar {
        let old = std::env::var_os(name);
        std::env::set_var(name, value);
        EnvVar { name, old }
    }
}

impl Drop for EnvVar {
    fn drop(&mut self) {
        match self.old.take() {
            Some(old) => std::env::set_var(self.name, old),
            None => std::env::remove_var(self.name),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scratch directories and the Secret Service.
// ---------------------------------------------------------------------------------------------

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        let path = std::env::temp_dir().join(unique(prefix));
        std::fs::create_dir(&path).expect("create a temp dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The shared private Secret Service (`mcp_testkit::secret_service`), started and ready, or a
/// failure saying what is missing (`cargo xtask interop-setup` installs it).
fn start_secret_service() -> SecretService {
    SecretService::start().unwrap_or_else(|err| panic!("{err}"))
}

/// Waits until `KeyringStore` (not only `dbus-send`) reaches the Secret Service on the bus of
/// `DBUS_SESSION_BUS_ADDRESS`.
fn wait_for_store(env: &SecretService, service: &str) {
    let deadline = Instant::now() + PROCESS_TIMEOUT;
    loop {
        let err = match KeyringStore::secret_service(service) {
            Ok(_) => return,
            Err(err) => err,
        };
        if Instant::now() >= deadline {
            panic!(
                "the Secret Service did not answer KeyringStore within {PROCESS_TIMEOUT:?} \
                 ({err}): {}",
                env.keyring_log()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every regular file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    secret_service::files_containing(dir, needle.as_bytes())
}

fn assert_not_logged(secrets: &[String]) {
    let text = logs().text();
    for secret in secrets {
        // As text, and as a `Debug`-printed byte array (how zbus would show a raw payload).
        let bytes = format!("{:?}", secret.as_bytes());
        let bytes = bytes.trim_start_matches('[').trim_end_matches(']');
        assert!(
            !text.contains(secret.as_str()) && !text.contains(bytes),
            "a secret appears in the captured logs"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The behaviour every backend must show.
// ---------------------------------------------------------------------------------------------

/// Writes `bytes` into `key`'s entry through the raw keyring API, bypassing `KeyringStore`.
type RawWriter = dyn Fn(&StoreKey, &[u8]);

/// Runs the shared checks on `store` (and on `reopen()`, a second instance: a second process).
/// Returns every secret used, to look for in logs and files.
async fn exercise(
    store: &KeyringStore,
    reopen: &dyn Fn() -> KeyringStore,
    other_service: &dyn Fn() -> KeyringStore,
    raw_write: &RawWriter,
) -> Vec<String> {
    let mut secrets = Vec::new();

    // Save → load round trip.
    let a = StoreKey::new(unique("https://a.example/mcp"), "default");
    assert_eq!(store.load(&a).await.expect("load before save"), None);
    let (creds_a, s) = credentials("a");
    secrets.extend(s);
    store.save(&a, &creds_a).await.expect("save");
    assert_eq!(store.load(&a).await.expect("load"), Some(creds_a.clone()));

    // Overwriting replaces.
    let (creds_a2, s) = credentials("a2");
    secrets.extend(s);
    store.save(&a, &creds_a2).await.expect("save again");
    assert_eq!(store.load(&a).await.expect("load"), Some(creds_a2.clone()));

    // Two servers, two accounts, and keys that a naive `account@server` would confuse: all
    // separate entries.
    let server_b = unique("https://b.example/mcp");
    let tricky = unique("b");
    let keys = [
        StoreKey::new(server_b.clone(), "default"),
        StoreKey::new(a.server.clone(), "alice"),
        StoreKey::new(server_b, "alice"),
        StoreKey::new("c", format!("{tricky}@x")),
        StoreKey::new("x@c", tricky),
    ];
    let mut saved = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let (creds, s) = credentials(&format!("k{i}"));
        secrets.extend(s);
        store.save(key, &creds).await.expect("save another key");
        saved.push(creds);
    }
    assert_eq!(
        store.load(&a).await.expect("load a"),
        Some(creds_a2.clone())
    );
    for (key, creds) in keys.iter().zip(&saved) {
        assert_eq!(
            store.load(key).await.expect("load another key").as_ref(),
            Some(creds),
            "{key:?}"
        );
    }

    // A second instance (as a second process would) finds what the first saved.
    let second = reopen();
    assert_eq!(
        second.load(&a).await.expect("load from a second instance"),
        Some(creds_a2.clone())
    );
    // Another application's service name does not.
    let other = other_service();
    assert_eq!(
        other.load(&a).await.expect("load from another service"),
        None
    );

    // Delete, then load → None; deleting again is fine; other entries stay.
    store.delete(&a).await.expect("delete");
    assert_eq!(store.load(&a).await.expect("load after delete"), None);
    assert_eq!(second.load(&a).await.expect("second after delete"), None);
    store.delete(&a).await.expect("delete a missing entry");
    assert_eq!(
        store
            .load(&keys[0])
            .await
            .expect("load a kept key")
            .as_ref(),
        Some(&saved[0])
    );

    // A corrupt entry: an error naming the entry, never its content.
    let user = KeyringStore::entry_user(&keys[0]);
    for garbage in [
        format!("not json {}", unique("GARBAGE")),
        format!(
            r#"{{"tokens":{{"access_token":"x","expires_at":"{}"}}}}"#,
            unique("GARBAGE")
        ),
    ] {
        raw_write(&keys[0], garbage.as_bytes());
        let err = store
            .load(&keys[0])
            .await
            .expect_err("a corrupt entry is an error");
        assert!(err.0.contains(&user), "the error names the entry: {err}");
        assert!(
            !err.0.contains("GARBAGE"),
            "the error shows the entry: {err}"
        );
        assert!(!format!("{err:?}").contains("GARBAGE"));
        secrets.push(garbage);
    }
    // Saving over a corrupt entry repairs it.
    store.save(&keys[0], &saved[0]).await.expect("save over");
    assert_eq!(
        store.load(&keys[0]).await.expect("load repaired").as_ref(),
        Some(&saved[0])
    );

    // Debug shows no secret.
    let shown = format!("{store:?} {second:?}");
    for secret in &secrets {
        assert!(!shown.contains(secret.as_str()), "{shown}");
    }

    // Clean up.
    for key in &keys {
        store.delete(key).await.expect("clean up");
        assert_eq!(store.load(key).await.expect("load cleaned"), None);
    }
    secrets
}

// ---------------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn secret_service_store() {
    let _serial = serial();
    let logs = logs();
    let env = start_secret_service();
    let _bus_address = EnvVar::set("DBUS_SESSION_BUS_ADDRESS", env.bus_address());
    let service = unique("mcp-auth-test");
    wait_for_store(&env, &service);

    let store = KeyringStore::secret_service(&service).expect("open the Secret Service");
    assert_eq!(store.describe(), "Secret Service");
    assert!(store.is_persistent());

    // With a Secret Service on the session bus, the default store is it.
    let chosen = default_store(&service);
    assert_eq!(chosen.store.describe(), "Secret Service");
    assert!(chosen.fallback_reason.is_none());

    let raw_store: Arc<CredentialStore> =
        zbus_secret_service_keyring_store::Store::new().expect("raw Secret Service store");
    let raw_service = service.clone();
    let raw_write = move |key: &StoreKey, bytes: &[u8]| {
        Entry::new_in_store(&raw_store, &raw_service, &KeyringStore::entry_user(key))
            .and_then(|entry| entry.set_secret(bytes))
            .expect("write a raw entry");
    };

    let reopen_service = service.clone();
    let reopen = move || KeyringStore::secret_service(&reopen_service).expect("reopen");
    let other_name = unique("mcp-auth-other");
    let other = move || KeyringStore::secret_service(&other_name).expect("open another");

    let rt = runtime();
    let secrets = rt.block_on(async {
        // Something is saved while the keyring file is checked.
        let held = StoreKey::new(unique("https://held.example"), "default");
        let (held_creds, mut held_secrets) = credentials("held");
        store.save(&held, &held_creds).await.expect("save");

        let mut secrets = exercise(&store, &reopen, &other, &raw_write).await;

        // gnome-keyring wrote its (encrypted) keyring file; no secret is in any file.
        let keyrings = env.home().join(".local/share/keyrings");
        let files: Vec<_> = std::fs::read_dir(&keyrings)
            .expect("gnome-keyring's keyring directory")
            .flatten()
            .filter(|entry| entry.metadata().is_ok_and(|m| m.is_file() && m.len() > 0))
            .collect();
        assert!(
            !files.is_empty(),
            "no keyring file under {}",
            keyrings.display()
        );
        secrets.append(&mut held_secrets);
        for secret in &secrets {
            let found = files_containing(env.root(), secret);
            assert!(found.is_empty(), "a secret is readable in {found:?}");
        }

        store.delete(&held).await.expect("clean up");

        // A hung Secret Service (the daemon stopped): calls give up after the timeout, and
        // once MAX_PENDING abandoned calls are outstanding, further calls fail at once.
        let slow = KeyringStore::secret_service(&service)
            .expect("open")
            .with_timeout(Duration::from_millis(300));
        let key = StoreKey::new("https://hung.example", "default");
        env.signal_keyring(libc::SIGSTOP)
            .expect("SIGSTOP the keyring daemon");
        for _ in 0..KeyringStore::MAX_PENDING {
            let started = Instant::now();
            let err = slow.load(&key).await.expect_err("a hung store times out");
            assert!(err.0.contains("no answer within"), "{err}");
            assert!(started.elapsed() < Duration::from_secs(5));
        }
        let started = Instant::now();
        let err = slow.load(&key).await.expect_err("fails at once");
        assert!(err.0.contains("have not finished"), "{err}");
        assert!(started.elapsed() < Duration::from_millis(250));
        env.signal_keyring(libc::SIGCONT)
            .expect("SIGCONT the keyring daemon");
        // The abandoned calls finish, and the store answers again.
        let deadline = Instant::now() + PROCESS_TIMEOUT;
        loop {
            match slow.load(&key).await {
                Ok(found) => {
                    assert_eq!(found, None);
                    break;
                }
                Err(err) if Instant::now() >= deadline => panic!("still hung: {err}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        secrets
    });

    let text = logs.text();
    assert!(
        text.contains("keyring call"),
        "the store's own TRACE events were not captured"
    );
    assert!(
        text.contains("creating entry with service"),
        "keyring-core's log records were not captured"
    );
    assert_not_logged(&secrets);
    drop(store);
    drop(chosen);
}

/// `keyctl(2)` on this thread: `KEYCTL_GET_KEYRING_ID` of a special keyring (no create).
fn keyring_id(special: libc::c_long) -> libc::c_long {
    const KEYCTL_GET_KEYRING_ID: libc::c_long = 0;
    // SAFETY: KEYCTL_GET_KEYRING_ID takes two integers and touches no memory of ours.
    unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_GET_KEYRING_ID,
            special,
            0 as libc::c_long,
        )
    }
}

/// Whether this thread has a session keyring of its own, rather than the user session keyring
/// standing in (as in a process not started from a login session: containers, CI, cron).
fn has_own_session_keyring() -> bool {
    const KEY_SPEC_SESSION_KEYRING: libc::c_long = -3;
    const KEY_SPEC_USER_SESSION_KEYRING: libc::c_long = -5;
    let session = keyring_id(KEY_SPEC_SESSION_KEYRING);
    session > 0 && session != keyring_id(KEY_SPEC_USER_SESSION_KEYRING)
}

/// Joins a new anonymous session keyring, like `keyctl session -`. Credentials are per thread:
/// this affects the calling thread and the threads it starts afterwards (the store's workers),
/// not the other tests.
fn join_new_session_keyring() {
    const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
    // SAFETY: a null name asks for an anonymous keyring; no memory of ours is touched.
    let id = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        )
    };
    assert!(
        id > 0,
        "cannot join a session keyring: {}",
        io::Error::last_os_error()
    );
}

#[test]
fn keyutils_store() {
    let _serial = serial();
    let logs = logs();
    let service = unique("mcp-auth-test");
    let dead = TempDir::new("mcp-auth-no-bus");
    let dead_address = format!("unix:path={}", dead.0.join("no-bus").display());

    if !has_own_session_keyring() {
        // Without a session keyring of its own, keyutils is refused, clearly, and the default
        // store falls back to memory saying why.
        let err = KeyringStore::keyutils(&service).expect_err("keyutils without a session keyring");
        assert!(err.0.contains("no session keyring of its own"), "{err}");
        let _bus_address = EnvVar::set("DBUS_SESSION_BUS_ADDRESS", &dead_address);
        let err = KeyringStore::open(&service).expect_err("no OS store at all");
        assert!(err.0.contains("Secret Service"), "{err}");
        assert!(err.0.contains("no session keyring of its own"), "{err}");
        let chosen = default_store(&service);
        assert!(!chosen.store.is_persistent());
        assert!(
            chosen
                .fallback_reason
                .as_deref()
                .is_some_and(|reason| reason.contains("in memory")),
            "{:?}",
            chosen.fallback_reason
        );
        eprintln!("no session keyring of its own: joining a new one for this test");
        join_new_session_keyring();
        assert!(has_own_session_keyring());
    }

    let store = KeyringStore::keyutils(&service)
        .unwrap_or_else(|err| panic!("kernel keyutils is not usable here: {err}"));
    let describe = store.describe();
    eprintln!(
        "keyutils store: {describe}; persistent: {}",
        store.is_persistent()
    );
    assert!(describe.starts_with("kernel keyutils ("), "{describe}");
    assert_eq!(
        store.is_persistent(),
        describe.contains("persistent keyring"),
        "{describe}"
    );

    // With no Secret Service on the session bus, `open` falls back to keyutils.
    {
        let _bus_address = EnvVar::set("DBUS_SESSION_BUS_ADDRESS", &dead_address);
        let opened = KeyringStore::open(&service).expect("open falls back to keyutils");
        assert_eq!(opened.describe(), describe);
        let chosen = default_store(&service);
        assert_eq!(chosen.store.describe(), describe);
        assert!(chosen.fallback_reason.is_none());
    }

    let raw_config = HashMap::from([("service_no_divider", "true")]);
    let raw_store: Arc<CredentialStore> =
        linux_keyutils_keyring_store::Store::new_with_configuration(&raw_config)
            .expect("raw keyutils store");
    let raw_service = service.clone();
    let raw_write = move |key: &StoreKey, bytes: &[u8]| {
        Entry::new_in_store(&raw_store, &raw_service, &KeyringStore::entry_user(key))
            .and_then(|entry| entry.set_secret(bytes))
            .expect("write a raw entry");
    };
    let reopen_service = service.clone();
    let reopen = move || KeyringStore::keyutils(&reopen_service).expect("reopen");
    let other_name = unique("mcp-auth-other");
    let other = move || KeyringStore::keyutils(&other_name).expect("open another");

    let rt = runtime();
    let secrets = rt.block_on(exercise(&store, &reopen, &other, &raw_write));

    assert!(
        logs.text().contains("keyring call"),
        "the store's own TRACE events were not captured"
    );
    assert_not_logged(&secrets);
}

/// A session bus that accepts connections and never answers: `secret_service` gives up after
/// its timeout instead of hanging.
#[test]
fn a_silent_bus_does_not_hang_open() {
    let _serial = serial();
    let dir = TempDir::new("mcp-auth-silent-bus");
    let path = dir.0.join("bus");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let _bus_address = EnvVar::set(
        "DBUS_SESSION_BUS_ADDRESS",
        &format!("unix:path={}", path.display()),
    );
    let started = Instant::now();
    let err = KeyringStore::secret_service("mcp-auth-test").expect_err("a silent bus");
    let waited = started.elapsed();
    assert!(err.0.contains("did not answer within"), "{err}");
    assert!(
        waited >= KeyringStore::DEFAULT_TIMEOUT && waited < KeyringStore::DEFAULT_TIMEOUT * 2,
        "{waited:?}"
    );
    // Closing the socket lets the abandoned worker finish.
    drop(listener);
}

#[test]
fn invalid_service_names_are_refused() {
    let _serial = serial();
    for bad in ["", "a@b", "tab\there"] {
        let err = KeyringStore::keyutils(bad).expect_err("refused");
        assert!(err.0.contains("invalid service name"), "{err}");
    }
}
