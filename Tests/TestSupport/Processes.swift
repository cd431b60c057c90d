import DBus
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Who runs what: the owner of a bus name, the processes running an executable, a process's parent; and the environment
// the bus gives the services it activates.

/// The environment the bus gives the daemons it activates (`UpdateActivationEnvironment`): e.g. a home of the test's
/// own, so that an activated lecternd never reads or writes the machine's library.
public func setActivationEnvironment(_ variables: [String: String], on connection: BusConnection) async throws {
    let entries = variables.sorted { $0.key < $1.key }.map { DBusValue.DictEntry(.string($0.key), .string($0.value)) }
    _ = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                  member: "UpdateActivationEnvironment",
                                  [.dictionary(key: .string, value: .string, entries)])
}

/// The pid of the process owning bus name `name`.
public func ownerPID(of name: String, on connection: BusConnection) async throws -> pid_t {
    let reply = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                          [.string(name)])
    guard case .uint32(let pid)? = reply.first else { throw BusError.failed("no pid for \(name): \(reply)") }
    return pid_t(pid)
}

/// The executable process `pid` runs, nil when there is no such process.
public func executable(of pid: pid_t) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
}

/// The pids of the processes running `path` (a daemon's media reader among them: it is lecternd too).
public func runningProcesses(of path: String) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(pid_t.init).filter { executable(of: $0) == path }
}

/// The parent of process `pid`, from /proc/PID/stat (its fourth field, after the name in parentheses).
public func parentPID(of pid: pid_t) -> pid_t? {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
          let stat = String(data: data, encoding: .utf8), let nameEnd = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
    return fields.count > 1 ? pid_t(fields[1]) : nil
}
