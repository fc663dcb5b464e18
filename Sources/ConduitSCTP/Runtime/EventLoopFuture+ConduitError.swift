#if SCTP
import ConduitCore
import NIOCore

extension EventLoopFuture where Value: Sendable {
    /// Awaits the value. The event loop side fails these futures with a `ConduitError` that is
    /// already the right answer, which passes through; anything else (a NIO channel error) becomes
    /// `code`, described as "`context`: error".
    func value(orFailWith code: ConduitError.Code, _ context: @autoclosure () -> String) async throws(ConduitError) -> Value {
        do {
            return try await get()
        } catch let error as ConduitError {
            throw error
        } catch {
            throw ConduitError(code, "\(context()): \(error)")
        }
    }
}
#endif
