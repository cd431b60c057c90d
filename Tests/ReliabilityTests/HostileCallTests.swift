import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// What a hostile client sends: every call gets a D-Bus error or the spec's "ignore", nothing a client can see
    /// changes, and the daemon opens no file outside the library (checked with strace on the running daemon).
    @Suite struct HostileCalls {
        static let sixteenMegabytes = String(repeating: "a", count: 16 << 20)

        /// Everything a client can read: every property of every interface (Position aside), the library's books
        /// and shelves.
        static func snapshot(_ rig: Rig, _ api: ExportedAPI) async throws -> [String: String] {
            var out: [String: String] = [:]
            for object in api.objects {
                for interface in object.interfaces where !interface.properties.isEmpty {
                    let reply = try await rig.getAll(interface.name, path: object.path)
                    for (name, value) in reply.first?.stringKeyedDictionary ?? [:] where name != "Position" {
                        out["\(object.path) \(interface.name).\(name)"] = "\(value)"
                    }
                }
            }
            out["books"] = "\(try await rig.lectern("ListBooks", [.int64(0), .boolean(true)]))"
            out["shelves"] = "\(try await rig.lectern("ListAllShelves"))"
            return out
        }

        /// Nests `value` in `depth` variants.
        static func nested(_ value: DBusValue, depth: Int) -> DBusValue {
            (0..<depth).reduce(value) { inner, _ in .variant(inner) }
        }

        @Test func hostileCallsGetAnErrorOrAreIgnoredChangeNothingAndOpenNoFileOutsideTheLibrary() async throws {
            try await Rig.with { rig in
                let daemon = try await rig.start()
                let media = try await ReliabilityMedia.shared()
                let book = try await rig.importBook(media.book)
                try await rig.lectern("ActivateBook", [.int64(book), .boolean(false)])
                _ = try await rig.poll({ try await rig.currentURL() ?? "" }, until: { $0.hasSuffix("/book/1.ogg") })
                let track = try #require(try await rig.get("Metadata").stringKeyedDictionary?["mpris:trackid"]?.objectPath)

                // A library folder with traps in it.
                let library = rig.directory.appending("library")
                try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
                let traps = ["escape.ogg": "/etc/shadow", "zero.ogg": "/dev/zero", "self.ogg": "/proc/self/mem"]
                for (name, target) in traps {
                    try FileManager.default.createSymbolicLink(atPath: library.appendingPathComponent(name).path, withDestinationPath: target)
                }
                let fifo = library.appendingPathComponent("fifo.ogg").path
                #expect(mkfifo(fifo, 0o644) == 0)


                // Watch every open the daemon makes from now on.
                let trace = rig.directory.appending("opens.trace").path
                let strace = try Subprocess("strace", ["-f", "-qq", "-e", "trace=open,openat,openat2,creat", "-o", trace,
                                                       "-p", "\(daemon.pid)"], stdout: .pipe, stderr: .pipe)
                defer { if strace.isRunning { strace.kill() } }
                // strace attaches to the daemon's threads one by one: wait for every one (the engine's worker thread,
                // which opens the files, is there from the start).
                let attached = try await rig.poll(timeout: .seconds(5), {
                    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")) ?? []
                    return !tasks.isEmpty && tasks.allSatisfy { task in
                        (try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\(task)/status", encoding: .utf8))?
                            .split(separator: "\n").first { $0.hasPrefix("TracerPid:") }.map { !$0.hasSuffix("\t0") } ?? false
                    }
                }, until: { $0 })
                if !attached {
                    let stderr = await strace.readAll(.stderr, timeout: .seconds(1))
                    Issue.record("strace did not attach: \(stderr)")
                    return
                }

                // The slowest answer to a call naming a file (the criterion for bad files: an error within a
                // second), and to a 16 MB call (libdbus moves 16 MB through the bus 2 KiB at a time: seconds).
                // A file of the library is opened while strace watches (the player loads it again): the control that
                // strace sees the daemon's opens.
                try await rig.lectern("ActivateBook", [.int64(book), .boolean(false)])
                _ = try await rig.poll({ try await rig.currentURL() ?? "" }, until: { $0.hasSuffix("/book/1.ogg") })
                // The engine opens it on its own thread, after ActivateBook has answered: before the hostile calls,
                // which may replace that load before it is made.
                let control = media.book.appendingPathComponent("1.ogg").path
                let controlSeen = try await rig.poll(timeout: .seconds(5), {
                    (try? String(contentsOfFile: trace, encoding: .utf8))?.contains("\"\(control)\"") ?? false
                }, until: { $0 })
                let api = try await ExportedAPI.walk(rig.client, destination: Names.lectern)
                let before = try await Self.snapshot(rig, api)

                var slowest = (time: Duration.zero, label: "")
                var slowestHuge = Duration.zero
                var unanswered: [String] = []
                func hostile(_ label: String, errorRequired: Bool = true, _ call: () async throws -> Void) async {
                    let start = ContinuousClock.now
                    let error = await rig.errorName(call)
                    if label.contains("16 MB") {
                        slowestHuge = max(slowestHuge, ContinuousClock.now - start)
                    } else if ContinuousClock.now - start > slowest.time {
                        slowest = (ContinuousClock.now - start, label)
                    }
                    if error?.hasPrefix("not a BusError") == true || (errorRequired && error == nil) {
                        unanswered.append("\(label): \(error ?? "succeeded")")
                    }
                }

                // Files and URIs outside the library, devices, /proc, schemes Lectern does not open, http URLs it refuses
                // (no host, credentials), a huge string. (An http URL it takes is a stream: PlayedToTests plays them.)
                let uris = ["file:///etc/shadow", "/etc/shadow", "file://" + library.appendingPathComponent("escape.ogg").path,
                            library.appendingPathComponent("zero.ogg").path, "file://" + fifo,
                            library.appendingPathComponent("self.ogg").path,
                            "file:///dev/zero", "/dev/random", "/proc/self/environ", "file:///proc/self/mem",
                            "data:audio/ogg;base64,T2dnUwACAAAAAAAAAAA=", "ftp://127.0.0.1/book.ogg", "smb://127.0.0.1/a.ogg",
                            "http://", "http://user:secret@127.0.0.1:1/book.ogg"]
                for uri in uris {
                    await hostile("OpenUri \(uri)") { try await rig.mpris("OpenUri", [.string(uri)]) }
                }
                // Only these calls name files; strace slows every syscall of the daemon (libdbus reads a 16 MB
                // message 2 KiB at a time), so it is detached before the rest.
                strace.terminate()
                _ = await strace.waitForExit(timeout: .seconds(10))

                // 16 MB strings.
                await hostile("OpenUri 16 MB") { try await rig.mpris("OpenUri", [.string("/" + Self.sixteenMegabytes)]) }
                await hostile("CreateShelf 16 MB") { try await rig.lectern("CreateShelf", [.string(Self.sixteenMegabytes), .int64(0)]) }
                await hostile("RenameBook 16 MB") { try await rig.lectern("RenameBook", [.int64(book), .string(Self.sixteenMegabytes)]) }
                await hostile("Get 16 MB") { _ = try await rig.get(Self.sixteenMegabytes) }
                // NaN and infinities: refused, or ignored as the spec says for out-of-range values.
                for number in [Double.nan, .infinity, -.infinity] {
                    await hostile("Volume \(number)", errorRequired: false) {
                        try await rig.mpris("Set", [.string(Names.player), .string("Volume"), .variant(.double(number))],
                                            interface: Names.properties)
                    }
                    await hostile("Rate \(number)", errorRequired: false) {
                        try await rig.mpris("Set", [.string(Names.player), .string("Rate"), .variant(.double(number))],
                                            interface: Names.properties)
                    }
                    for key in ["speed", "volume"] {
                        await hostile("SetBookSettings \(key) \(number)") {
                            try await rig.lectern("SetBookSettings", [.int64(book), .vardict([key: .double(number)])])
                        }
                    }
                }
                for position in [Int64.max, Int64.min, -1] {
                    await hostile("SetPosition \(position)", errorRequired: false) {
                        try await rig.mpris("SetPosition", [.objectPath(track), .int64(position)])
                    }
                }
                // Deeply nested variants where a property value is expected.
                for (property, value) in [("Volume", DBusValue.double(0.5)), ("LoopStatus", .string("Track")), ("Shuffle", .boolean(true))] {
                    await hostile("Set \(property) in 30 variants") {
                        try await rig.mpris("Set", [.string(Names.player), .string(property), Self.nested(value, depth: 30)],
                                            interface: Names.properties)
                    }
                }
                await hostile("SetBookSettings nested variants") {
                    try await rig.lectern("SetBookSettings", [.int64(book), .vardict(["speed": Self.nested(.double(2), depth: 30)])])
                }
                // Wrong types on every member (Peer and Introspectable take no arguments and libdbus answers them
                // whatever comes; Quit is left out: it ends the daemon by design).
                var maker = ValueMaker(random: SeededGenerator(seed: 6), paths: ["/nonexistent"])
                var wrongTypeRefusals: [String] = []
                for object in api.objects {
                    for interface in object.interfaces
                    where !["org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable"].contains(interface.name) {
                        for method in interface.methods where "\(interface.name).\(method.name)" != "org.mpris.MediaPlayer2.Quit" {
                            let arguments = maker.wrongArguments(for: method.inputs)
                            let error = await rig.errorName {
                                _ = try await rig.client.call(Names.lectern, path: object.path, interface: interface.name,
                                                              member: method.name, arguments, timeout: .seconds(10))
                            }
                            if error != DBusErrors.invalidArgs { wrongTypeRefusals.append("\(object.path) \(interface.name).\(method)(\(arguments)): \(error ?? "succeeded")") }
                        }
                        for property in interface.properties {
                            let value = maker.wrongArguments(for: [property.type]).first ?? .string("x")
                            let error = await rig.errorName {
                                _ = try await rig.client.call(Names.lectern, path: object.path, interface: Names.properties, member: "Set",
                                                              [.string(interface.name), .string(property.name), .variant(value)],
                                                              timeout: .seconds(10))
                            }
                            let expected = property.writable ? DBusErrors.invalidArgs : DBusErrors.propertyReadOnly
                            if error != expected && error != DBusErrors.invalidArgs {
                                wrongTypeRefusals.append("Set \(interface.name).\(property.name) = \(value): \(error ?? "succeeded")")
                            }
                        }
                    }
                }

                #expect(unanswered.isEmpty, "hostile calls that did not get a D-Bus error: \(unanswered)")
                #expect(wrongTypeRefusals.isEmpty, "wrong types not refused with InvalidArgs: \(wrongTypeRefusals)")
                #expect(slowest.time <= .seconds(1), "the slowest hostile call (\(slowest.label)) took \(slowest.time)")
                #expect(daemon.isRunning)
                let after = try await Self.snapshot(rig, api)
                let changed = before.keys.sorted().filter { before[$0] != after[$0] }.map { "\($0): \(before[$0] ?? "-") -> \(after[$0] ?? "-")" }
                #expect(changed.isEmpty, "state changed: \(changed)")

                let opens = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
                // (Not /dev/urandom: GLib reads it for its own random numbers.)
                let outside = ["\"/etc/shadow", "\"/dev/zero", "\"/dev/random", "\"/proc/self/environ", "\"/proc/self/mem",
                               "\"\(library.path)/escape.ogg", "\"\(library.path)/zero.ogg",
                               "\"\(library.path)/self.ogg", "\"\(fifo)"]
                let forbidden = opens.filter { line in outside.contains { line.contains($0) } }
                #expect(controlSeen, "strace did not see the daemon open \(control):\n\(opens.joined(separator: "\n"))")
                #expect(forbidden.isEmpty, "the daemon opened files outside the library:\n\(forbidden.joined(separator: "\n"))")
                Figures.record("hostile", "calls", "\(uris.count + 17) hostile + wrong types on \(api.objects.flatMap(\.interfaces).reduce(0) { $0 + $1.methods.count + $1.properties.count }) members")
                Figures.record("hostile", "slowest answer", "\(Figures.ms(slowest.time)) (\(slowest.label)); 16 MB calls: \(Figures.ms(slowestHuge))")
                Figures.record("hostile", "opens outside the library", "\(forbidden.count)")
                try await rig.stop()
            }
        }
    }
}

enum DBusErrors {
    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
}
