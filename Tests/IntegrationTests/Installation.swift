import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Lectern installed by `scripts/install.sh --binaries` (what `make install` runs, with this build's executables) into
/// a prefix the test owns: the installed lecternd, its D-Bus activation files and the desktop entry are the real ones.
struct Installation: Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let script = repository.appendingPathComponent("scripts/install.sh").path
    /// The daemon's bus names, each with an installed activation file.
    static let busNames = ["org.lectern.Lectern1", "org.mpris.MediaPlayer2.lectern", "org.lectern.Lectern"]

    let prefix: String
    var binDirectory: String { prefix + "/bin" }
    var lecternd: String { binDirectory + "/lecternd" }
    var lectern: String { binDirectory + "/lectern" }
    /// Where the desktop looks for the desktop entry and icon (an XDG_DATA_DIRS entry).
    var dataDirectory: String { prefix + "/share" }
    /// The D-Bus activation files, for a bus's `servicedir`.
    var servicesDirectory: String { dataDirectory + "/dbus-1/services" }

    /// Installs into `prefix` (a directory that does not exist yet, or an empty one); throws when install.sh fails.
    static func install(into prefix: String) async throws -> Installation {
        let install = try await Subprocess.run(script, ["--prefix", prefix, "--binaries", productsDirectory.path],
                                               workingDirectory: repository, timeout: .seconds(60))
        try #require(install.status == 0, "install.sh: \(install.stdout)\(install.stderr)")
        return Installation(prefix: prefix)
    }

    /// `install.sh --uninstall` for this prefix.
    func uninstall() async throws -> (status: Int32, stdout: String, stderr: String) {
        try await Subprocess.run(Self.script, ["--prefix", prefix, "--uninstall"], workingDirectory: Self.repository)
    }
}

// MARK: - Who runs what

/// The environment the bus gives the daemons it activates (`UpdateActivationEnvironment`): e.g. a home of the test's
/// own, so that an activated lecternd never reads or writes the machine's library.
func setActivationEnvironment(_ variables: [String: String], on connection: BusConnection) async throws {
    let entries = variables.sorted { $0.key < $1.key }.map { DBusValue.DictEntry(.string($0.key), .string($0.value)) }
    _ = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                  member: "UpdateActivationEnvironment",
                                  [.dictionary(key: .string, value: .string, entries)])
}

/// The pid of the process owning bus name `name`.
func ownerPID(of name: String, on connection: BusConnection) async throws -> pid_t {
    let reply = try await connection.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                          [.string(name)])
    guard case .uint32(let pid)? = reply.first else { throw BusError.failed("no pid for \(name): \(reply)") }
    return pid_t(pid)
}

/// The executable process `pid` runs, nil when there is no such process.
func executable(of pid: pid_t) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
}

/// The pids of the processes running `path` (a daemon's media reader among them: it is lecternd too).
func runningProcesses(of path: String) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(pid_t.init).filter { executable(of: $0) == path }
}

/// The parent of process `pid`, from /proc/PID/stat (its fourth field, after the name in parentheses).
func parentPID(of pid: pid_t) -> pid_t? {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
          let stat = String(data: data, encoding: .utf8), let nameEnd = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
    return fields.count > 1 ? pid_t(fields[1]) : nil
}
