//! A scenario hook's hold on the server: writes as a system session, expiry,
//! disconnection.

use super::*;

/// Direct access to the server for scenario hooks: writes as a system session, expiry.
pub struct ServerCtl<'a> {
    pub(super) world: &'a mut World,
}

impl std::fmt::Debug for ServerCtl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCtl")
            .field("now_us", &self.world.now_us)
            .finish()
    }
}

/// The session the server-side hooks write as: it owns no ephemerals.
pub const SYSTEM_SESSION: SessionId = SessionId(0);

impl ServerCtl<'_> {
    /// Creates a persistent node (the system session owns no ephemerals).
    pub fn create(&mut self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, ZkError> {
        if mode.is_ephemeral() {
            return Err(ZkError::BadArguments(
                "server hooks create persistent nodes only".into(),
            ));
        }
        let mut notes = Vec::new();
        let r = self
            .world
            .tree
            .create(SYSTEM_SESSION, path, data, mode, &mut notes);
        self.world.route(&mut notes);
        r.map(|(p, _)| p)
    }
    pub fn delete(&mut self, path: &str) -> Result<(), ZkError> {
        let mut notes = Vec::new();
        let r = self.world.tree.delete(path, None, &mut notes);
        self.world.route(&mut notes);
        r
    }
    pub fn set_data(&mut self, path: &str, data: &[u8]) -> Result<Stat, ZkError> {
        let mut notes = Vec::new();
        let r = self.world.tree.set_data(path, data, None, &mut notes);
        self.world.route(&mut notes);
        r
    }
    /// Expires a session at the server now, as Curator's KillSession.
    pub fn expire(&mut self, session: SessionId) {
        if let Some(c) = self.world.sessions.get(&session).map(|s| s.client) {
            self.world.force_expire(c);
        }
    }
    /// Breaks the connection of a session's client now, as a connection loss: its
    /// requests in flight, the one about to be applied included, fail with
    /// ConnectionLoss, and the client reconnects to the same session.
    pub fn disconnect(&mut self, session: SessionId) {
        if let Some(c) = self.world.sessions.get(&session).map(|s| s.client) {
            self.world.control(Control::Disconnect(c));
        }
    }
    pub fn tree(&self) -> &DataTree {
        &self.world.tree
    }
    pub fn now_us(&self) -> u64 {
        self.world.now_us
    }
}
