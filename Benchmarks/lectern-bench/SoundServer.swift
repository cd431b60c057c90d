import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A headless PulseAudio of the bench's own, with one null sink (which consumes audio in real time, like a sound
/// card): the players' CPU while playing into a real sound server, not into a timed null output. Its socket and
/// runtime directory are in a temporary directory; `environment` points a client at it.
final class SoundServer {
    let process: Subprocess
    let environment: [String: String]
    private let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "lectern-bench-pulse")
        let runtime = directory.appending("xdg")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let socket = runtime.path + "/pulse/native"
        environment = ["XDG_RUNTIME_DIR": runtime.path, "PULSE_SERVER": "unix:" + socket]
        process = try Subprocess(
            "pulseaudio",
            ["--daemonize=no", "--exit-idle-time=-1", "-n", "--log-target=file:\(directory.path)/pulse.log",
             "-L", "module-native-protocol-unix auth-anonymous=1", "-L", "module-null-sink sink_name=bench"],
            environment: Subprocess.environment(adding: environment.merging(["HOME": directory.path]) { $1 }),
            stdout: .null, stderr: .appendingToFile(directory.appending("pulse.log")))
        let deadline = ContinuousClock.now + .seconds(10)
        while access(socket, F_OK) != 0 {
            guard process.isRunning, ContinuousClock.now < deadline else {
                stop()
                let log = (try? String(contentsOf: directory.appending("pulse.log"), encoding: .utf8)) ?? ""
                throw BenchFailure("pulseaudio did not start: \(log.suffix(500))")
            }
            sleepFor(.milliseconds(20))
        }
        sleepFor(.milliseconds(200))  // the socket exists slightly before the server accepts on it
    }

    func stop() {
        process.kill()
        _ = process.waitForExit(timeout: .seconds(5))
    }
}
