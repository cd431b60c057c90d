import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors starting a `PrivateBus`.
public enum PrivateBusError: Error, CustomStringConvertible, Sendable {
    /// No dbus-daemon on PATH.
    case daemonNotFound
    /// dbus-daemon exited, or printed no address in time.
    case startFailed(String)

    public var description: String {
        switch self {
        case .daemonNotFound:
            return "dbus-daemon not found on PATH (apt-get install dbus-daemon, or run scripts/install-deps.sh)"
        case .startFailed(let why):
            return "private dbus-daemon failed to start: \(why)"
        }
    }
}

/// A session bus of its own for a test: a `dbus-daemon --nofork` with a minimal configuration in a temporary
/// directory (a unix socket there, EXTERNAL auth, everything allowed, no system service directories, so
/// nothing installed on the machine is ever activated).
///
/// `stop()` or `deinit` kills it with SIGKILL, reaps it and removes the directory.
public final class PrivateBus: @unchecked Sendable {
    /// The bus address, as printed by dbus-daemon (`unix:path=...,guid=...`).
    public let address: String
    /// This process's environment with DBUS_SESSION_BUS_ADDRESS = `address`, DBUS_SYSTEM_BUS_ADDRESS pointing
    /// at a socket that doesn't exist (fails fast, never the machine's bus), XDG_RUNTIME_DIR = `runtimeDirectory`.
    public let environment: [String: String]
    /// A private XDG_RUNTIME_DIR (mode 0700), also in the temporary directory.
    public let runtimeDirectory: URL
    /// A service directory the bus watches: drop `*.service` files here to test D-Bus activation.
    public let servicesDirectory: URL
    /// The dbus-daemon's pid.
    public var pid: pid_t { daemon.pid }

    private let directory: TemporaryDirectory
    private let daemon: Subprocess
    private let lock = NSLock()
    private var stopped = false

    /// Starts the bus and waits for its address (a few ms; gives up after `timeout`). `limits` become `<limit>`
    /// elements of its configuration: e.g. `["max_replies_per_connection": 50_000]`, as a desktop's session bus
    /// has it (dbus-daemon's own default lets a sender wait for 128 replies at most, and refuses its further calls).
    /// `serviceDirectories`: more directories of `*.service` files for D-Bus activation (e.g. an installed prefix's
    /// share/dbus-1/services), after ``servicesDirectory``.
    public init(timeout: Duration = .seconds(5), limits: [String: Int] = [:], serviceDirectories: [String] = []) throws {
        guard let daemonPath = Subprocess.findExecutable("dbus-daemon") else {
            throw PrivateBusError.daemonNotFound
        }
        let dir = try TemporaryDirectory(prefix: "lectern-bus")
        let runtime = dir.appending("runtime")
        let services = dir.appending("services")
        let config = dir.appending("session.conf")
        let fm = FileManager.default
        try fm.createDirectory(at: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try fm.createDirectory(at: services, withIntermediateDirectories: false)
        try PrivateBus.configuration(socketDirectory: dir.path, servicesDirectories: [services.path] + serviceDirectories,
                                     limits: limits)
            .write(to: config, atomically: true, encoding: .utf8)

        let daemon = try Subprocess(
            daemonPath,
            ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--nosyslog", "--print-address=1"],
            environment: Subprocess.environment(removing: ["DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS"]),
            workingDirectory: dir.url,
            stdout: .pipe, stderr: .pipe)
        guard let line = daemon.readLine(timeout: timeout), !line.isEmpty else {
            daemon.kill()
            let status = daemon.waitForExit(timeout: .seconds(2))
            let err = daemon.readAll(.stderr, timeout: .milliseconds(200))
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw PrivateBusError.startFailed(
                status == nil ? "no address within \(timeout)" : "\(daemon.termination.map { "\($0)" } ?? "?"): \(err)")
        }
        self.address = line.trimmingCharacters(in: .whitespacesAndNewlines)
        self.daemon = daemon
        self.directory = dir
        self.runtimeDirectory = runtime
        self.servicesDirectory = services
        self.environment = Subprocess.environment(
            adding: [
                "DBUS_SESSION_BUS_ADDRESS": address,
                "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(dir.path)/no-system-bus",
                "XDG_RUNTIME_DIR": runtime.path,
            ],
            removing: ["DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE"])
    }

    /// Kills the daemon (SIGKILL), reaps it and removes its directory. Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        daemon.kill()
        _ = daemon.waitForExit(timeout: .seconds(10))
        directory.remove()
    }

    /// Whether the daemon is still running.
    public var isRunning: Bool { daemon.isRunning }

    deinit { stop() }

    static func configuration(socketDirectory: String, servicesDirectories: [String], limits: [String: Int] = [:]) -> String {
        let limitElements = limits.sorted { $0.key < $1.key }
            .map { "\n  <limit name=\"\(xmlEscape($0.key))\">\($0.value)</limit>" }.joined()
        return """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <keep_umask/>
          <listen>unix:dir=\(xmlEscape(socketDirectory))</listen>
          <auth>EXTERNAL</auth>
          \(servicesDirectories.map { "<servicedir>\(xmlEscape($0))</servicedir>" }.joined(separator: "\n  "))
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>\(limitElements)
        </busconfig>

        """
    }

    private static func xmlEscape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
