import DequeModule

/// A stream a peer announced. Until the app makes an inbound session for it, what arrives is
/// held here (bounded), with who sent it; after that, it flows straight to the app.
struct InboundSessionState<Sender: Sendable>: Sendable {
    let type: SessionType
    /// True once the app made the inbound session.
    var isAccepted = false
    var pending = Deque<(sender: Sender, delivery: InboundDelivery)>()
    var pendingBytes = 0
    var closeReason: DataSessionCloseReason?
}
