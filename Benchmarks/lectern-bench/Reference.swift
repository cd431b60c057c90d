import CDBus
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The two-hop floor: a minimal libdbus responder, this tool started again as `lectern-bench --serve-echo ADDRESS`
/// (a process of its own, like a player), answering every method call with a variant string from a blocking
/// read_write/pop loop without any dispatch machinery. A Get to it crosses the bus daemon twice, like a Get to a
/// player, so it is about the best any libdbus service could do on this machine.
enum EchoResponder {
    static let name = "org.lectern.BenchEcho"

    /// Runs in the child; never returns (killed by the parent).
    static func serve(address: String) -> Never {
        let client: BusClient
        do { client = try BusClient(address: address) } catch {
            print("error: \(error)")
            exit(1)
        }
        var error = DBusError()
        dbus_error_init(&error)
        let result = dbus_bus_request_name(client.connection, name, 4, &error)  // DO_NOT_QUEUE
        guard result == 1 else {  // PRIMARY_OWNER
            print("error: RequestName returned \(result): \(BusClient.text(error))")
            exit(1)
        }
        let line = Array("ready\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        let connection = client.connection
        while dbus_connection_read_write(connection, -1) != 0 {
            while let message = dbus_connection_pop_message(connection) {
                if dbus_message_get_type(message) == 1, let reply = dbus_message_new_method_return(message) {
                    var iter = DBusMessageIter()
                    var variant = DBusMessageIter()
                    dbus_message_iter_init_append(reply, &iter)
                    _ = dbus_message_iter_open_container(&iter, BusClient.typeCode("v"), "s", &variant)
                    "Playing".withCString { cString in
                        var pointer: UnsafePointer<CChar>? = cString
                        _ = dbus_message_iter_append_basic(&variant, BusClient.typeCode("s"), &pointer)
                    }
                    _ = dbus_message_iter_close_container(&iter, &variant)
                    _ = dbus_connection_send(connection, reply, nil)
                    dbus_message_unref(reply)
                }
                dbus_message_unref(message)
            }
        }
        exit(0)
    }

    /// Starts the responder process on `bus`; kill it when done.
    static func start(address: String, environment: [String: String]) throws -> Subprocess {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let process = try Subprocess(me, ["--serve-echo", address], environment: environment, stdout: .pipe,
                                     stderr: .inherit)
        let line = process.readLine(timeout: .seconds(10)) ?? ""
        guard line.hasPrefix("ready") else {
            process.kill()
            _ = process.waitForExit(timeout: .seconds(5))
            throw BenchFailure("echo responder did not start: \(line)")
        }
        return process
    }
}

/// GStreamer alone: `gst-launch-1.0 playbin` on the same file and sink, for the memory and CPU a pipeline
/// costs before any daemon is added.
struct PipelineReference {
    var rssKB = 0, hwmKB = 0
    var cpu: CPUWindow.Result?
    var threads = 0
    var command = ""
    /// The same pipeline into the sound server (`pulsesink`), and the server's CPU meanwhile.
    var intoSoundServer: CPUPair?
}

func measurePipelineReference(audio: URL, settings: Settings, log: URL) -> PipelineReference? {
    func playbin(_ sink: String) -> [String] {
        ["-q", "playbin", "uri=\(audio.absoluteString)", "audio-sink=\(sink)", "flags=audio+soft-volume"]
    }
    /// Starts gst-launch, lets it play about as long as the players' file has played before their window.
    func start(_ arguments: [String], environment: [String: String]? = nil) -> Subprocess? {
        guard let process = try? Subprocess("gst-launch-1.0", arguments, environment: environment,
                                            stdout: .appendingToFile(log), stderr: .appendingToFile(log)) else { return nil }
        sleepFor(settings.playSettle + .milliseconds(200))
        return process
    }
    func end(_ process: Subprocess) {
        process.kill()
        _ = process.waitForExit(timeout: .seconds(5))
    }
    var reference = PipelineReference()
    reference.command = shellLine(["gst-launch-1.0"] + playbin("fakesink sync=true"))
    guard let process = start(playbin("fakesink sync=true")) else { return nil }
    guard process.isRunning, let m = ProcStats.memory(process.pid) else {
        end(process)
        return nil
    }
    (reference.rssKB, reference.hwmKB) = (m.rssKB, m.hwmKB)
    let window = CPUWindow(process.pid)
    sleepFor(settings.cpuWindow)
    reference.cpu = window.finish()
    reference.threads = ProcStats.threadCount(process.pid)
    end(process)

    if let server = settings.soundServer,
       let process = start(playbin("pulsesink"), environment: Subprocess.environment(adding: server.environment)) {
        if process.isRunning {
            let player = CPUWindow(process.pid), sound = CPUWindow(server.process.pid)
            sleepFor(settings.cpuWindow)
            reference.intoSoundServer = CPUPair(player: player.finish(), server: sound.finish())
        }
        end(process)
    }
    return reference
}
