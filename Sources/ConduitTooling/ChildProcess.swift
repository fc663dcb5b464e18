package import Conduit

#if canImport(Glibc)
package import Glibc
#elseif canImport(Darwin)
package import Darwin
#endif

/// A child process for the reference runs of `conduit bench --reference` (tsctp, the UDP blast),
/// the room bench's relays and the cluster failure tests' relays:
/// spawned directly (no shell), standard output and error into one pipe that is only ever read
/// without blocking, and ended with SIGKILL (tsctp ignores SIGTERM). Its output is kept up to
/// 64 KiB; every wait has a deadline.
package final class ChildProcess {
    package let pid: pid_t
    package let name: String
    private let output: Int32
    private var collected: [UInt8] = []
    private var exitStatus: Int32?
    private static let outputLimit = 64 * 1_024

    /// Spawns `path` with `arguments`, the current environment plus `environment`, standard input
    /// from /dev/null, signal dispositions and mask reset to the defaults.
    package init(path: String, arguments: [String], environment: [String: String] = [:]) throws(ConduitError) {
        name = path.split(separator: "/").last.map(String.init) ?? path
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw ConduitError(.invalidConfiguration, "pipe for \(name): \(Self.describeErrno())")
        }
        // Close-on-exec, so no other child inherits them; the dup2 onto 1 and 2 clears it there.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var variables: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            cursor += 1
        }
        variables.merge(environment) { $1 }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child = pid_t()
        let status = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        _ = close(fds[1])
        guard status == 0 else {
            _ = close(fds[0])
            throw ConduitError(.invalidConfiguration, "cannot run \(path): \(String(cString: strerror(status)))")
        }
        pid = child
        output = fds[0]
    }

    deinit {
        kill()
        _ = close(output)
    }

    /// Everything printed so far (after reading what is in the pipe now).
    package func text() -> String {
        drain()
        return String(decoding: collected, as: UTF8.self)
    }

    /// Whether the child has exited (reaping it if so).
    package var hasExited: Bool {
        if exitStatus != nil { return true }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
        return exitStatus != nil
    }

    /// Waits until a line of output satisfies `parse` (returning its value), the child exits, or
    /// `deadline` passes.
    package func waitForLine<T>(until deadline: ContinuousClock.Instant, _ parse: (Substring) -> T?) async -> T? {
        while true {
            for line in text().split(separator: "\n") {
                if let value = parse(line) { return value }
            }
            if hasExited || ContinuousClock.now >= deadline {
                // One last read: the line may have arrived with the exit.
                return text().split(separator: "\n").lazy.compactMap(parse).first
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for the child to exit by itself until `deadline`; false if it is still running.
    package func waitForExit(until deadline: ContinuousClock.Instant) async -> Bool {
        while !hasExited {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        drain()
        return true
    }

    /// SIGKILL and reap. Safe to call more than once.
    package func kill() {
        guard exitStatus == nil else { return }
        if !hasExited {
            _ = Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            exitStatus = status
        }
        drain()
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            if collected.count < Self.outputLimit { collected.append(contentsOf: buffer[0..<count]) }
        }
    }

    static func describeErrno() -> String { String(cString: strerror(errno)) }
}
