//! [`KeyringStore`]: the OS credential store, through keyring-core and one store crate per
//! platform (only the target's own is compiled).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use async_trait::async_trait;
use keyring_core::{CredentialStore, Entry, Error as KeyringError};

use super::{EntryLock, LockDir, StoreError, StoreKey, TokenStore};
use crate::credentials::StoredCredentials;

/// The keyring user of the reachability probe: it has no `@`, so it is never a real entry.
const PROBE_USER: &str = "mcp-auth reachability probe";

/// Why keyutils is refused to a process without a session keyring of its own.
#[cfg(target_os = "linux")]
const NO_SESSION_KEYRING: &str = "this process has no session keyring of its own (the user \
    session keyring stands in, and keys added there cannot be read back); start it from a login \
    session that sets one up (pam_keyinit) or under `keyctl session -`";

/// Which OS credential store a [`KeyringStore`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    #[cfg(all(
        unix,
        not(any(target_os = "macos", target_os = "ios", target_os = "android"))
    ))]
    SecretService,
    #[cfg(target_os = "linux")]
    Keyutils {
        /// The user's persistent keyring is linked (entries survive logout, not reboot).
        persistent_keyring: bool,
        /// `persistent_keyring_expiry`, when readable.
        expiry_secs: Option<u64>,
    },
    #[cfg(target_os = "macos")]
    MacKeychain,
    #[cfg(target_os = "windows")]
    WindowsCredentialManager,
}

impl Backend {
    /// The backend's name, for people.
    fn name(self) -> &'static str {
        match self {
            #[cfg(all(
                unix,
                not(any(target_os = "macos", target_os = "ios", target_os = "android"))
            ))]
            Backend::SecretService => "Secret Service",
            #[cfg(target_os = "linux")]
            Backend::Keyutils { .. } => "kernel keyutils",
            #[cfg(target_os = "macos")]
            Backend::MacKeychain => "macOS Keychain",
            #[cfg(target_os = "windows")]
            Backend::WindowsCredentialManager => "Windows Credential Manager",
        }
    }
}

/// Tokens in the OS credential store.
///
/// | platform | backend | lifetime of an entry |
/// | --- | --- | --- |
/// | Linux, BSDs | Secret Service (GNOME Keyring, KWallet, KeePassXC…) on the session D-Bus | until deleted (the service keeps it encrypted on disk) |
/// | Linux, no Secret Service | kernel keyutils | kernel memory only, lost at reboot (below) |
/// | macOS | the login Keychain | until deleted |
/// | Windows | Credential Manager | until deleted |
///
/// One entry per [`StoreKey`]: the keyring *service* is the application's name and the keyring
/// *user* is [`KeyringStore::entry_user`] (`account@server`, escaped so that two servers or two
/// accounts never share an entry). The entry's secret is the JSON of [`StoredCredentials`].
///
/// The OS APIs block (a D-Bus round trip, a kernel call, a Keychain prompt), so every call runs
/// on a worker thread and is abandoned after a timeout ([`KeyringStore::DEFAULT_TIMEOUT`]): a
/// hung D-Bus never hangs the caller. An abandoned call may still complete later; while
/// [`KeyringStore::MAX_PENDING`] of them are outstanding, further calls fail at once. The async
/// methods need a Tokio runtime with its timer enabled.
///
/// **keyutils.** Entries are added to the session keyring and, when the kernel offers one,
/// linked into the user's *persistent* keyring, which survives logout but not a reboot, and
/// which the kernel drops once it has gone unused for
/// `/proc/sys/kernel/keys/persistent_keyring_expiry` seconds (three days by default). Without a
/// persistent keyring, entries live as long as the session keyring (until logout or reboot) and
/// [`is_persistent`](TokenStore::is_persistent) is `false`. Nothing is written to disk either way.
///
/// `Debug` shows the backend and the service name only.
pub struct KeyringStore {
    store: Arc<CredentialStore>,
    service: String,
    backend: Backend,
    timeout: Duration,
    pending: Arc<AtomicUsize>,
    /// The file locks the processes sharing this store take around a refresh.
    locks: LockDir,
}

impl fmt::Debug for KeyringStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyringStore")
            .field("backend", &self.backend.name())
            .field("service", &self.service)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl KeyringStore {
    /// How long one operation on the OS credential store may take before it is abandoned.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// How many abandoned (timed-out, still running) operations a store tolerates before it
    /// fails further calls at once instead of starting more worker threads.
    pub const MAX_PENDING: usize = 4;

    /// The platform's OS credential store for `service` (the application's name, e.g.
    /// `"mcph"`), after checking that it answers.
    ///
    /// On Linux this is the Secret Service when one answers on the session D-Bus, else kernel
    /// keyutils; on the BSDs the Secret Service; on macOS the login Keychain; on Windows the
    /// Credential Manager. The error says why none is usable. This blocks for at most
    /// [`KeyringStore::DEFAULT_TIMEOUT`] per backend tried.
    ///
    /// `service` must be non-empty and contain no `@` and no control characters.
    pub fn open(service: &str) -> Result<KeyringStore, StoreError> {
        #[cfg(target_os = "linux")]
        {
            let secret_service = match KeyringStore::secret_service(service) {
                Ok(store) => return Ok(store),
                Err(err) => err,
            };
            tracing::debug!(reason = %secret_service, "no Secret Service; trying kernel keyutils");
            match KeyringStore::keyutils(service) {
                Ok(store) => Ok(store),
                Err(keyutils) => Err(StoreError(format!(
                    "no OS credential store is usable: {secret_service}; {keyutils}"
                ))),
            }
        }
        #[cfg(all(
            unix,
            not(any(
                target_os = "linux",
                target_os = "macos",
                target_os = "ios",
                target_os = "android"
            ))
        ))]
        {
            KeyringStore::secret_service(service)
        }
        #[cfg(target_os = "macos")]
        {
            KeyringStore::macos_keychain(service)
        }
        #[cfg(target_os = "windows")]
        {
            KeyringStore::windows_credential_manager(service)
        }
        #[cfg(not(any(
            all(
                unix,
                not(any(target_os = "macos", target_os = "ios", target_os = "android"))
            ),
            target_os = "macos",
            target_os = "windows"
        )))]
        {
            let _ = service;
            Err(StoreError(
                "no OS credential store is supported on this platform".into(),
            ))
        }
    }

    /// The Secret Service on the session D-Bus (the bus of `DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`), after checking that a Secret Service answers there. Entries go
    /// into its default collection (the login keyring).
    #[cfg(all(
        unix,
        not(any(target_os = "macos", target_os = "ios", target_os = "android"))
    ))]
    pub fn secret_service(service: &str) -> Result<KeyringStore, StoreError> {
        KeyringStore::connect(service, "Secret Service", |service| {
            let store: Arc<CredentialStore> =
                zbus_secret_service_keyring_store::Store::new().map_err(|e| explain(&e))?;
            probe_read(&store, &service)?;
            Ok((store, Backend::SecretService))
        })
    }

    /// Kernel keyutils: the process's session keyring, linked to the user's persistent keyring
    /// when the kernel has one (see [`KeyringStore`] for how long entries live).
    ///
    /// Fails when the kernel refuses keyring calls (e.g. a container's seccomp filter), and when
    /// the process has no session keyring of its own: then the kernel's user session keyring
    /// stands in, and keys added to it by serial number cannot be read back (they are not
    /// "possessed"). Login sessions get one from `pam_keyinit`; `keyctl session -` starts a
    /// program with one. The check writes and removes a probe key (no secret in it).
    #[cfg(target_os = "linux")]
    pub fn keyutils(service: &str) -> Result<KeyringStore, StoreError> {
        KeyringStore::connect(service, "kernel keyutils", |service| {
            use linux_keyutils::{KeyRing, KeyRingIdentifier};

            let refused = |err: linux_keyutils::KeyError| format!("the kernel refused: {err}");
            let session =
                KeyRing::from_special_id(KeyRingIdentifier::Session, false).map_err(refused)?;
            let user_session =
                KeyRing::from_special_id(KeyRingIdentifier::UserSession, false).map_err(refused)?;
            if session == user_session {
                return Err(NO_SESSION_KEYRING.into());
            }

            let config = HashMap::from([("service_no_divider", "true")]);
            let store: Arc<CredentialStore> =
                linux_keyutils_keyring_store::Store::new_with_configuration(&config)
                    .map_err(|e| explain(&e))?;
            // Building an entry looks up the session keyring and links the persistent one to it.
            let probe =
                Entry::new_in_store(&store, &service, PROBE_USER).map_err(|e| explain(&e))?;
            let mut persistent_keyring = probe
                .as_any()
                .downcast_ref::<linux_keyutils_keyring_store::Cred>()
                .is_some_and(|cred| cred.persistent.is_some());
            if persistent_keyring {
                match probe.set_secret(b"probe") {
                    Ok(()) => {}
                    // The key is in the session keyring, but linking it failed: do without.
                    Err(KeyringError::NoStorageAccess(_)) => {
                        tracing::debug!(
                            "keyutils: the persistent keyring is not linkable; using the session \
                             keyring only"
                        );
                        persistent_keyring = false;
                    }
                    Err(err) => return Err(explain(&err)),
                }
                remove_probe(&probe)?;
            }
            if !persistent_keyring {
                let session_only = session_keyring_only(probe);
                session_only.set_secret(b"probe").map_err(|e| explain(&e))?;
                remove_probe(&session_only)?;
            }
            let expiry_secs =
                std::fs::read_to_string("/proc/sys/kernel/keys/persistent_keyring_expiry")
                    .ok()
                    .and_then(|text| text.trim().parse().ok());
            Ok((
                store,
                Backend::Keyutils {
                    persistent_keyring,
                    expiry_secs,
                },
            ))
        })
    }

    /// The user's login Keychain.
    #[cfg(target_os = "macos")]
    pub fn macos_keychain(service: &str) -> Result<KeyringStore, StoreError> {
        KeyringStore::connect(service, "macOS Keychain", |service| {
            let store: Arc<CredentialStore> =
                apple_native_keyring_store::keychain::Store::new().map_err(|e| explain(&e))?;
            probe_read(&store, &service)?;
            Ok((store, Backend::MacKeychain))
        })
    }

    /// The Windows Credential Manager (generic credentials named `user@service`). Its secrets
    /// are limited to 2,560 bytes of JSON; larger credentials fail to save with an error.
    #[cfg(target_os = "windows")]
    pub fn windows_credential_manager(service: &str) -> Result<KeyringStore, StoreError> {
        KeyringStore::connect(service, "Windows Credential Manager", |service| {
            let config = HashMap::from([("divider", "@"), ("service_no_divider", "true")]);
            let store: Arc<CredentialStore> =
                windows_native_keyring_store::Store::new_with_configuration(&config)
                    .map_err(|e| explain(&e))?;
            probe_read(&store, &service)?;
            Ok((store, Backend::WindowsCredentialManager))
        })
    }

    /// Abandons each operation after `timeout` instead of [`KeyringStore::DEFAULT_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> KeyringStore {
        self.timeout = timeout;
        self
    }

    /// The keyring user of `key`'s entry (its service is the store's): `account@server`, with
    /// `%` and `@` percent-escaped in the account and `%` in the server, and control characters
    /// escaped in both, so distinct keys never share an entry. OS keyring UIs show it.
    pub fn entry_user(key: &StoreKey) -> String {
        let mut user = String::with_capacity(key.account.len() + key.server.len() + 1);
        escape_into(&mut user, &key.account, true);
        user.push('@');
        escape_into(&mut user, &key.server, false);
        user
    }

    /// Builds (and probes) the store for `service` on a worker thread, waiting at most
    /// [`KeyringStore::DEFAULT_TIMEOUT`].
    fn connect<F>(service: &str, name: &'static str, build: F) -> Result<KeyringStore, StoreError>
    where
        F: FnOnce(String) -> Result<(Arc<CredentialStore>, Backend), String> + Send + 'static,
    {
        check_service(name, service)?;
        let probe_service = service.to_owned();
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("mcp-auth-keyring-open".into())
            .spawn(move || {
                let result = build(probe_service);
                // The receiver is gone only when `connect` already timed out.
                let _ = tx.send(result);
            })
            .map_err(|err| StoreError(format!("{name}: cannot start a worker thread: {err}")))?;
        let (store, backend) = match rx.recv_timeout(KeyringStore::DEFAULT_TIMEOUT) {
            Ok(Ok(found)) => found,
            Ok(Err(reason)) => return Err(StoreError(format!("{name} is not usable: {reason}"))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(StoreError(format!(
                    "{name} did not answer within {} s",
                    KeyringStore::DEFAULT_TIMEOUT.as_secs()
                )))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(StoreError(format!(
                    "{name}: the worker thread stopped without an answer"
                )))
            }
        };
        let store = KeyringStore {
            store,
            service: service.to_owned(),
            backend,
            timeout: KeyringStore::DEFAULT_TIMEOUT,
            pending: Arc::new(AtomicUsize::new(0)),
            locks: LockDir::for_service(service),
        };
        tracing::debug!(store = %store.describe(), service, "OS credential store opened");
        Ok(store)
    }

    /// How `key`'s entry is named in errors: never its content.
    fn entry_label(&self, key: &StoreKey) -> String {
        format!(
            "entry '{}' (service '{}')",
            KeyringStore::entry_user(key),
            self.service
        )
    }

    /// The modifiers for a new entry: a readable label where the backend has one.
    fn modifiers(&self, key: &StoreKey) -> Vec<(&'static str, String)> {
        match self.backend {
            #[cfg(all(
                unix,
                not(any(target_os = "macos", target_os = "ios", target_os = "android"))
            ))]
            Backend::SecretService => vec![(
                "label",
                format!(
                    "{}: credentials for {} at {}",
                    self.service, key.account, key.server
                ),
            )],
            #[allow(unreachable_patterns)]
            _ => {
                let _ = key;
                Vec::new()
            }
        }
    }

    /// Runs `op` on `key`'s entry on a worker thread, abandoning it after the timeout.
    async fn run<T, F>(&self, what: &str, key: &StoreKey, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Entry) -> Result<T, KeyringError> + Send + 'static,
    {
        let name = self.backend.name();
        let label = self.entry_label(key);
        let fail = |reason: String| StoreError(format!("{name}: cannot {what} {label}: {reason}"));

        if self.pending.fetch_add(1, Ordering::SeqCst) >= KeyringStore::MAX_PENDING {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(fail(format!(
                "{} earlier operations have not finished; the store is not answering",
                KeyringStore::MAX_PENDING
            )));
        }
        let pending = PendingGuard(Arc::clone(&self.pending));
        let store = Arc::clone(&self.store);
        let service = self.service.clone();
        let user = KeyringStore::entry_user(key);
        let modifiers = self.modifiers(key);
        #[cfg(target_os = "linux")]
        let session_only = matches!(
            self.backend,
            Backend::Keyutils {
                persistent_keyring: false,
                ..
            }
        );
        let (tx, rx) = tokio::sync::oneshot::channel();
        tracing::trace!(store = name, entry = %label, operation = what, "keyring call");
        let spawned = std::thread::Builder::new()
            .name("mcp-auth-keyring".into())
            .spawn(move || {
                let _pending = pending;
                let mods: HashMap<&str, &str> =
                    modifiers.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let result = Entry::new_in_store_with_modifiers(&store, &service, &user, &mods)
                    .and_then(|entry| {
                        #[cfg(target_os = "linux")]
                        let entry = if session_only {
                            session_keyring_only(entry)
                        } else {
                            entry
                        };
                        op(&entry)
                    });
                // The receiver is gone only when the caller timed out or was cancelled.
                let _ = tx.send(result);
            });
        if let Err(err) = spawned {
            // The closure (and its guard) was dropped, so the count is already restored.
            return Err(fail(format!("cannot start a worker thread: {err}")));
        }
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(err))) => Err(fail(explain(&err))),
            Ok(Err(_)) => Err(fail("the worker thread stopped without an answer".into())),
            Err(_) => Err(fail(format!(
                "no answer within {} s (is the keyring locked, waiting for a prompt?)",
                self.timeout.as_secs_f64()
            ))),
        }
    }
}

#[async_trait]
impl TokenStore for KeyringStore {
    fn describe(&self) -> String {
        match self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils {
                persistent_keyring: true,
                expiry_secs,
            } => {
                let unused = expiry_secs.map_or_else(
                    || "a few days (persistent_keyring_expiry)".to_string(),
                    human_duration,
                );
                format!(
                    "kernel keyutils (persistent keyring: kept in kernel memory across logins \
                     until reboot, or until unused for {unused})"
                )
            }
            #[cfg(target_os = "linux")]
            Backend::Keyutils {
                persistent_keyring: false,
                ..
            } => "kernel keyutils (session keyring only: lost at logout and at reboot)".into(),
            other => other.name().into(),
        }
    }

    fn is_persistent(&self) -> bool {
        match self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils {
                persistent_keyring, ..
            } => persistent_keyring,
            #[allow(unreachable_patterns)]
            _ => true,
        }
    }

    async fn load(&self, key: &StoreKey) -> Result<Option<StoredCredentials>, StoreError> {
        let found = self
            .run("load", key, |entry| match entry.get_secret() {
                Ok(bytes) => Ok(Some(bytes)),
                Err(KeyringError::NoEntry) => Ok(None),
                Err(err) => Err(err),
            })
            .await?;
        let Some(bytes) = found else {
            return Ok(None);
        };
        // serde_json's messages can quote the data; say only where and what kind of error.
        serde_json::from_slice::<StoredCredentials>(&bytes)
            .map(Some)
            .map_err(|err| {
                StoreError(format!(
                    "{}: {} does not hold stored credentials (JSON {} error at line {}, \
                     column {}); delete it and sign in again",
                    self.backend.name(),
                    self.entry_label(key),
                    json_category(&err),
                    err.line(),
                    err.column()
                ))
            })
    }

    async fn save(
        &self,
        key: &StoreKey,
        credentials: &StoredCredentials,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_vec(credentials).map_err(|err| {
            StoreError(format!(
                "{}: cannot encode the credentials for {} (JSON {} error)",
                self.backend.name(),
                self.entry_label(key),
                json_category(&err)
            ))
        })?;
        self.run("save", key, move |entry| entry.set_secret(&json))
            .await
    }

    async fn delete(&self, key: &StoreKey) -> Result<(), StoreError> {
        self.run("delete", key, |entry| match entry.delete_credential() {
            Ok(()) | Err(KeyringError::NoEntry) => Ok(()),
            // Several items match (e.g. in two collections): remove them all.
            Err(KeyringError::Ambiguous(entries)) => {
                for found in entries {
                    match found.delete_credential() {
                        Ok(()) | Err(KeyringError::NoEntry) => {}
                        Err(err) => return Err(err),
                    }
                }
                Ok(())
            }
            Err(err) => Err(err),
        })
        .await
    }

    /// Every process of this user shares the OS store: an OS file lock per entry
    /// ([`LockDir::for_service`]) keeps their refreshes one at a time.
    async fn lock_entry(&self, key: &StoreKey, wait: Duration) -> Result<EntryLock, StoreError> {
        Ok(self.locks.lock(key, wait).await?.into_entry_lock())
    }
}

/// Decrements the pending count when a worker finishes (or is never started).
struct PendingGuard(Arc<AtomicUsize>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads the probe entry: the store answers if that gives a value or "no entry".
#[cfg(any(
    all(
        unix,
        not(any(target_os = "macos", target_os = "ios", target_os = "android"))
    ),
    target_os = "macos",
    target_os = "windows"
))]
fn probe_read(store: &Arc<CredentialStore>, service: &str) -> Result<(), String> {
    let entry = Entry::new_in_store(store, service, PROBE_USER).map_err(|e| explain(&e))?;
    match entry.get_secret() {
        Ok(_) | Err(KeyringError::NoEntry) => Ok(()),
        Err(err) => Err(explain(&err)),
    }
}

/// Removes the keyutils probe key (gone already is fine).
#[cfg(target_os = "linux")]
fn remove_probe(probe: &Entry) -> Result<(), String> {
    match probe.delete_credential() {
        Ok(()) | Err(KeyringError::NoEntry) => Ok(()),
        Err(err) => Err(explain(&err)),
    }
}

/// The same keyutils entry, without the link to the persistent keyring.
#[cfg(target_os = "linux")]
fn session_keyring_only(entry: Entry) -> Entry {
    match entry
        .as_any()
        .downcast_ref::<linux_keyutils_keyring_store::Cred>()
    {
        Some(cred) => Entry::new_with_credential(Arc::new(linux_keyutils_keyring_store::Cred {
            persistent: None,
            ..cred.clone()
        })),
        None => entry,
    }
}

/// Checks the application's service name: the stores' entry names rely on it.
fn check_service(backend: &str, service: &str) -> Result<(), StoreError> {
    if service.is_empty() || service.contains('@') || service.chars().any(char::is_control) {
        return Err(StoreError(format!(
            "{backend}: invalid service name {service:?}: it must be non-empty, without '@' or \
             control characters"
        )));
    }
    Ok(())
}

/// Appends `text`, percent-escaping `%`, control characters and (if `escape_at`) `@`.
fn escape_into(out: &mut String, text: &str, escape_at: bool) {
    for c in text.chars() {
        if c == '%' || (escape_at && c == '@') || c.is_control() {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{byte:02X}");
            }
        } else {
            out.push(c);
        }
    }
}

/// A keyring error for people, never with the entry's data (`BadEncoding` and `BadDataFormat`
/// carry it; they are described without it).
fn explain(err: &KeyringError) -> String {
    match err {
        KeyringError::PlatformFailure(inner) => format!("the store failed: {inner}"),
        KeyringError::NoStorageAccess(inner) => {
            format!("no access to the store (locked or not permitted): {inner}")
        }
        KeyringError::NoEntry => "no such entry".into(),
        KeyringError::BadEncoding(_) => "the entry is not UTF-8".into(),
        KeyringError::BadDataFormat(_, _) => "the entry's data is malformed".into(),
        KeyringError::BadStoreFormat(reason) => format!("the store is malformed: {reason}"),
        KeyringError::TooLong(what, limit) => {
            format!("the {what} is longer than the store's limit of {limit}")
        }
        KeyringError::Invalid(what, reason) => format!("invalid {what}: {reason}"),
        KeyringError::Ambiguous(entries) => format!(
            "{} entries match; delete them and sign in again",
            entries.len()
        ),
        KeyringError::NoDefaultStore => "no default store is set".into(),
        KeyringError::NotSupportedByStore(what) => format!("not supported by the store: {what}"),
        _ => "an error the keyring library does not classify".into(),
    }
}

/// The kind of a JSON error, without serde's message (which can quote the data).
fn json_category(err: &serde_json::Error) -> &'static str {
    match err.classify() {
        serde_json::error::Category::Io => "I/O",
        serde_json::error::Category::Syntax => "syntax",
        serde_json::error::Category::Data => "data",
        serde_json::error::Category::Eof => "truncated-input",
    }
}

/// `259200` → `"3 days"`, `7200` → `"2 hours"`, `90` → `"90 s"`.
#[cfg(target_os = "linux")]
fn human_duration(secs: u64) -> String {
    match secs {
        s if s >= 86_400 && s % 86_400 == 0 => plural(s / 86_400, "day"),
        s if s >= 3_600 && s % 3_600 == 0 => plural(s / 3_600, "hour"),
        s => format!("{s} s"),
    }
}

#[cfg(target_os = "linux")]
fn plural(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_users_are_distinct() {
        let pairs = [
            ("https://a.example", "default"),
            ("https://b.example", "default"),
            ("https://a.example", "alice"),
            ("c", "a@b"),
            ("b@c", "a"),
            ("x%40y", "z"),
            ("x@y", "z"),
            ("s", "a%40b"),
        ];
        let users: Vec<String> = pairs
            .iter()
            .map(|(server, account)| KeyringStore::entry_user(&StoreKey::new(*server, *account)))
            .collect();
        for (i, a) in users.iter().enumerate() {
            for b in &users[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(users[0], "default@https://a.example");
        assert_eq!(users[3], "a%40b@c");
        assert_eq!(users[4], "a@b@c");
        assert_eq!(
            KeyringStore::entry_user(&StoreKey::new("s\n", "a\0")),
            "a%00@s%0A"
        );
    }

    #[test]
    fn service_names_are_checked() {
        assert!(check_service("x", "mcph").is_ok());
        assert!(check_service("x", "com.example.mcph").is_ok());
        for bad in ["", "a@b", "a\nb"] {
            assert!(check_service("x", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn errors_never_carry_entry_data() {
        let data = b"secret-bytes".to_vec();
        let shown = [
            explain(&KeyringError::BadEncoding(data.clone())),
            explain(&KeyringError::BadDataFormat(
                data,
                Box::new(std::io::Error::other("x")),
            )),
        ];
        for text in shown {
            assert!(!text.contains("secret"), "{text}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(259_200), "3 days");
        assert_eq!(human_duration(86_400), "1 day");
        assert_eq!(human_duration(7_200), "2 hours");
        assert_eq!(human_duration(90), "90 s");
    }
}
