import DequeModule

/// A stream the peer announced. Until the app makes an inbound session for it, what arrives is
/// held here (bounded); after that, it flows straight to the app.
struct InboundSessionState: Sendable {
    package let type: SessionType
    /// True once the app made the inbound session.
    var isAccepted = false
    var pending = Deque<InboundDelivery>()
    var pendingBytes = 0
    package var closeReason: DataSessionCloseReason?
}
