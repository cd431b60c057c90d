import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Desktop {
    /// The home network's renderers (Cast1, `lectern cast list`), with a real one: Rygel's playbin renderer. Rygel and
    /// lecternd run in a network namespace of the test's own, so SSDP stays on its loopback; the test's clients reach
    /// lecternd through the private bus's socket.
    @Suite struct Cast {
        @Test func castListFindsTheRenderersAndFollowsThemComingAndGoing() async throws {
            let namespace = try NetworkNamespace()
            defer { namespace.remove() }
            try await DaemonFixture.with(daemonArguments: ["--network", "--network-interface", "lo"],
                                         daemonPrefix: namespace.prefix) { d in
                #expect(try await d.castProperty("Network") == .boolean(true))
                let rygel = try RygelRenderer(named: "Test Speaker", in: namespace, directory: d.directory.appending("rygel"),
                                              environment: d.environment)
                defer { rygel.stop() }
                let found = try await d.castList(until: { $0.contains("Test Speaker") })
                #expect(found.hasPrefix("Test Speaker  127.0.0.1  (lo, uuid:"), "\(found)\n\(rygel.log)\n\(d.log)")
                let json = try await d.lectern("cast", "list", "--json")
                #expect(json.status == 0 && json.stdout.contains("\"name\":\"Test Speaker\"") && json.stdout.contains("\"address\":\"127.0.0.1\""),
                        "\(json)")

                // It says goodbye as it stops: it leaves the list.
                rygel.stop()
                let gone = try await d.castList(until: { $0 == "no renderers found" })
                #expect(gone == "no renderers found", "\(gone)\n\(d.log)")
            }
        }

        @Test func withTheNetworkOffCastListSaysWhy() async throws {
            try await DaemonFixture.with { d in
                let listed = try await d.lectern("cast", "list")
                #expect(listed.status == 1, "\(listed)")
                #expect(listed.stderr.contains("lecternd is not on the home network: the network is off"), "\(listed)")
                #expect(try await d.castProperty("Network") == .boolean(false))
                #expect(try await d.castProperty("Renderers") == .array(.structure([.string, .string, .string, .string]), []))
            }
        }
    }
}

extension DaemonFixture {
    /// A property of org.lectern.Cast1, unwrapped.
    func castProperty(_ name: String) async throws -> DBusValue? {
        try await client.call(Lib.busName, path: Lib.path, interface: MPRIS.properties, member: "Get",
                              [.string("org.lectern.Cast1"), .string(name)], timeout: .seconds(10)).first?.unwrapped
    }

    /// `lectern cast list`'s output, asked again until `done` says it is what the test waits for (15 s at most).
    func castList(until done: (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(15)
        var listed = try await lectern("cast", "list", "--wait", "0")
        while !done(listed.stdout), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            listed = try await lectern("cast", "list", "--wait", "0")
        }
        #expect(listed.status == 0, "\(listed)")
        return listed.stdout
    }
}

/// Rygel 0.42 as a media renderer (its playbin plugin) named `name`, alone in `namespace`, on its loopback
/// (``rygelConfiguration(enabling:title:)``).
final class RygelRenderer: Sendable {
    private let process: Subprocess
    private let logFile: URL

    init(named name: String, in namespace: NetworkNamespace, directory: URL, environment: [String: String]) throws {
        let config = directory.appendingPathComponent("config")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try rygelConfiguration(enabling: "Playbin", title: name)
            .write(to: config.appendingPathComponent("rygel.conf"), atomically: true, encoding: .utf8)
        var env = environment
        env["XDG_CONFIG_HOME"] = config.path
        env["HOME"] = directory.path
        logFile = directory.appendingPathComponent("rygel.log")
        process = try Subprocess(namespace.prefix[0], Array(namespace.prefix.dropFirst()) + ["rygel"], environment: env,
                                 stdout: .appendingToFile(logFile), stderr: .appendingToFile(logFile))
    }

    /// Stops it as its owner would (SIGTERM: it says goodbye on the network), and waits for it to exit.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if process.waitForExit(timeout: .seconds(10)) == nil { process.kill() }
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
}
