public import ConduitCore

public import ConduitRooms
/// Why a call placed with ``ConduitRuntime/placeCall(on:to:room:relay:token:timeout:data:)`` was
/// not answered.
public struct CallNotAnswered: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why the callee did not answer the call.
    public enum Reason: String, Hashable, Sendable {
        /// The callee rejected (its data says why, for example "busy").
        case rejected
        /// The callee did not answer in time.
        case timedOut
        /// The callee left the relay before answering.
        case calleeLeft
        /// The caller cancelled (its task was cancelled).
        case cancelled
        /// The caller's conference ended before the answer came.
        case disconnected
    }

    /// Why the call was not answered.
    public var reason: Reason
    /// The invitation the call was placed with, once the relay had accepted it.
    public var invitation: InvitationID?
    /// The callee's answer data (rejections).
    public var data: [UInt8]

    public var description: String {
        data.isEmpty ? "call not answered: \(reason.rawValue)" : "call not answered: \(reason.rawValue) (\(String(decoding: data, as: UTF8.self)))"
    }
}

/// The 1:1 call flow on invitations: the caller and the callee are joined to the relay (a
/// lobby room each, say); the caller invites the callee with the call's room ID as custom data;
/// on accept both join that room, where their data sessions work as in any conference.
///
/// ```swift
/// // caller                                            // callee
/// let call = try await runtime.placeCall(             for await event in lobby.invitationEvents {
///     on: lobby, to: "bob", room: "call-42",              guard case .newInvitation(let ring) = event else { continue }
///     relay: url, token: callToken,                       let call = try await runtime.answerCall(ring, on: lobby,
///     timeout: .seconds(30))                                  relay: url, token: callToken)
/// ```
///
/// A caller cancels by cancelling the task that placed the call.
extension ConduitRuntime {
    /// Invites `callee` into `room` (the room ID is the invitation's data unless `data` is
    /// given), waits for its answer and, on accept, joins `room` with `token`. Throws
    /// ``CallNotAnswered`` (rejected with its data, timed out, callee left, cancelled), the
    /// relay's `InvitationError` (`inviteesOffline` when the callee is not on the relay: a call
    /// rings only peers that can answer), or the join's `ConduitError`.
    public func placeCall(
        on lobby: Conference, to callee: PeerID, room: RoomID, relay url: String, token: String, timeout: Duration, data: [UInt8]? = nil
    ) async throws -> Conference {
        let receipt = try await lobby.invite([callee], data: data ?? Array(room.rawValue.utf8), timeout: timeout, onlineOnly: true)
        let outcome = await withTaskCancellationHandler {
            await lobby.outcome(of: receipt.id)
        } onCancel: {
            Task { try? await lobby.cancel(receipt.id) }
        }
        guard let outcome else { throw CallNotAnswered(reason: .disconnected, invitation: receipt.id, data: []) }
        switch outcome.state(of: callee) {
        case .accepted?:
            return try await join(relay: url, room: room, as: lobby.localPeer, token: token)
        case .rejected?: throw CallNotAnswered(reason: .rejected, invitation: receipt.id, data: outcome.answerData[callee] ?? [])
        case .timedOut?: throw CallNotAnswered(reason: .timedOut, invitation: receipt.id, data: [])
        case .left?: throw CallNotAnswered(reason: .calleeLeft, invitation: receipt.id, data: [])
        case .cancelled?, .pending?, nil: throw CallNotAnswered(reason: .cancelled, invitation: receipt.id, data: [])
        }
    }

    /// Answers a call: joins the room named by the invitation's data (or `room`), then accepts,
    /// so the callee is in the room when the caller hears the accept. If the accept is refused
    /// (the call was cancelled or timed out meanwhile), leaves the room and throws the refusal.
    public func answerCall(_ call: NewInvitation, on lobby: Conference, relay url: String, token: String, room: RoomID? = nil) async throws -> Conference {
        guard let target = try room ?? String(validating: call.data, as: UTF8.self).map({ text throws(ConduitError) in try RoomID(text) }) else {
            throw ConduitError(.invalidIdentifier, "the call's data is not a room ID (not UTF-8); pass room:")
        }
        let conference = try await join(relay: url, room: target, as: lobby.localPeer, token: token)
        do {
            try await lobby.accept(call.id)
        } catch {
            await conference.leave()
            throw error
        }
        return conference
    }
}
