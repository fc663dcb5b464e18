#if SCTP
import NIOCore

/// Waiting for the peer to acknowledge what was written, driven by the socket's own events: every
/// upcall (a SACK freeing send buffer space, the SENDER_DRY notification once nothing is owed,
/// the end of the association) runs ``SCTPConnection/service()``, which completes the waits that
/// are over. No timer ticks meanwhile, only each wait's deadline.
extension SCTPConnection {
    struct AcknowledgementWaiter {
        let promise: EventLoopPromise<Int>
        let deadline: Scheduled<Void>
    }

    /// Completes with 0 once everything written so far is acknowledged, or with the chunks still
    /// owed when the association ends (or never came up) or `deadline` passes. On the loop.
    func whenAcknowledged(by deadline: NIODeadline) -> EventLoopFuture<Int> {
        let loop = stack.loop
        guard state == .established else { return loop.makeSucceededFuture(outstandingAtEnd ?? outstanding) }
        let owed = outstanding
        guard owed > 0, deadline > .now() else { return loop.makeSucceededFuture(owed) }
        let promise = loop.makePromise(of: Int.self)
        let id = nextAcknowledgementWaiter
        nextAcknowledgementWaiter += 1
        let timeout = loop.scheduleTask(deadline: deadline) { [self] in
            guard acknowledgementWaiters.removeValue(forKey: id) != nil else { return }
            promise.succeed(outstandingAtEnd ?? outstanding)
        }
        acknowledgementWaiters[id] = AcknowledgementWaiter(promise: promise, deadline: timeout)
        return promise.futureResult
    }

    /// Ends the waits that are over: all of them once nothing is owed or the association ended.
    func completeAcknowledgementWaiters() {
        guard !acknowledgementWaiters.isEmpty else { return }
        let owed: Int
        if state == .closed {
            owed = outstandingAtEnd ?? 0
        } else {
            owed = outstanding
            guard owed == 0 else { return }
        }
        let waiters = acknowledgementWaiters.values
        acknowledgementWaiters.removeAll()
        for waiter in waiters {
            waiter.deadline.cancel()
            waiter.promise.succeed(owed)
        }
    }
}
#endif
