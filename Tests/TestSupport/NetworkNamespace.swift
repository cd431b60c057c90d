import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// iproute2's `ip`, which makes and removes network namespaces and runs programs in them.
public let ipTool = Subprocess.findExecutable("ip") ?? "/usr/sbin/ip"

/// A network namespace of the test's own, with its loopback up: the UPnP peers and lecternd run in it, so that SSDP's
/// multicast and every connection stay on its loopback and nothing reaches the machine's network. `remove()` kills
/// what still runs in it (only the test's own processes are there) and deletes it. Needs root (CAP_SYS_ADMIN).
public final class NetworkNamespace: Sendable {
    public let name: String
    private static let count = Atomic<Int>(0)

    public init() throws {
        name = "lectern-\(getpid())-\(Self.count.add(1, ordering: .relaxed).newValue)"
        for arguments in [["netns", "add", name], ["-n", name, "link", "set", "lo", "up"]] {
            let result = try Subprocess.run(ipTool, arguments, timeout: .seconds(10))
            guard result.status == 0 else {
                if arguments[1] == "set" { remove() }
                throw NetworkNamespaceError(description: "ip \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)")
            }
        }
    }

    /// What runs a command in the namespace, before the command: `ip netns exec NAME` (ip execs the command: the
    /// process is the command's).
    public var prefix: [String] { [ipTool, "netns", "exec", name] }

    /// `command` run in the namespace: the executable and the arguments to start (``prefix``, then the command).
    public func exec(_ command: [String]) -> (String, [String]) { (ipTool, Array(prefix.dropFirst()) + command) }

    public func remove() {
        if let pids = try? Subprocess.run(ipTool, ["netns", "pids", name], timeout: .seconds(10)).stdout {
            for pid in pids.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
        }
        _ = try? Subprocess.run(ipTool, ["netns", "delete", name], timeout: .seconds(10))
    }
}

/// An `ip` command that failed while making a namespace.
public struct NetworkNamespaceError: Error, CustomStringConvertible {
    public let description: String
}
