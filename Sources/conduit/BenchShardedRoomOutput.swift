import ArgumentParser
import Conduit
import ConduitTooling
import Foundation

/// `conduit bench --room --in-process`: the relay's shard group in process, driven by synthetic
/// members (see `BenchShardedRoom`), and what it prints.
extension BenchRoomOptions {
    func runInProcess(size: Int?, runs: Int, json: Bool) async throws {
        guard relays == 1, relayArguments.isEmpty, rate == 0 else {
            throw ValidationError("--in-process runs one relay in this process at full speed: --relays, --relay-arg and --room-rate do not apply")
        }
        var options = BenchShardedRoom.Options()
        options.senders = senders
        options.receivers = receivers
        options.messages = messages
        options.size = size ?? options.size
        options.threads = relayThreads.isEmpty ? [1, 2] : relayThreads
        options.runs = runs
        let report: BenchShardedRoomReport
        do throws(ConduitError) {
            report = try await BenchShardedRoom(options: options).run { run in
                let line = String(
                    format: "[in-process] relay threads %d: %.0f forwarded messages/s in %.2f s, CPU %.2f µs per forwarded message, %d crossed shards (%@)\n",
                    run.threads, run.forwardedMessagesPerSecond, run.elapsedSeconds, run.cpuMicrosPerForwardedMessage, run.crossShardFrames, run.ended)
                FileHandle.standardError.write(Data(line.utf8))
            }
        } catch {
            throw ValidationError(error.message)
        }
        if json {
            try ReportOutput.printJSON(report)
        } else {
            print(String(format: "room in process: %d → %d, %d × %d B per sender, the relay's shards and the synthetic members on this machine's CPUs",
                         report.senders, report.receivers, report.messagesPerSender, report.size))
            for summary in report.byThreads {
                let rate = summary.forwardedMessagesPerSecond
                let cpu = summary.cpuMicrosPerForwardedMessage
                let rounds = summary.ratioToFirstPerRound.map { String(format: " (per round %.2f–%.2f×)", $0.min, $0.max) } ?? ""
                print(String(
                    format: "relay threads %d: %.0f forwarded messages/s median (%.0f–%.0f, %d runs), %.2f× the first%@; process CPU %.2f µs per forwarded message (%.2f–%.2f)",
                    summary.threads, rate.median, rate.min, rate.max, summary.runs, summary.ratioToFirst, rounds, cpu.median, cpu.min, cpu.max))
            }
        }
        guard report.isComplete else {
            let bad = report.runs.filter { !$0.isComplete }
            let first = bad.first!
            throw ValidationError(
                "\(bad.count) run(s) lost, duplicated or reordered messages; the first (\(first.threads) threads): \(first.missing) missing, \(first.duplicates) duplicates, \(first.outOfOrder) out of order, \(first.malformed) malformed (\(first.ended))")
        }
    }
}
