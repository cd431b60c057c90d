import DBus
import Foundation
import Testing
import TestSupport

extension Integration {
    /// What a careless or hostile client sends: the right D-Bus error, and playback goes on untouched.
    @Suite struct BadInput {
        @Test func wrongTypesUnknownMembersAndReadOnlyPropertiesAreRefused() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Prerolled and playing, and read by the media reader (which changes Metadata): before the mark.
                _ = try await d.waitForPosition(atLeast: 1)
                try await d.waitForTracksDiscovered()
                let url = try await d.currentURL()
                let track = try #require(try await d.trackID())
                let mark = d.signals.mark

                let wrongArguments: [(String, [DBusValue])] = [
                    ("Seek", [.string("ten seconds")]),
                    ("Seek", [.int32(5)]),
                    ("Seek", []),
                    ("Seek", [.int64(1), .int64(2)]),
                    ("SetPosition", [.string(track.rawValue), .int64(1_000_000)]),
                    ("SetPosition", [.objectPath(track)]),
                    ("SetPosition", [.int64(1_000_000), .objectPath(track)]),
                    ("OpenUri", [.int32(1)]),
                    ("OpenUri", []),
                    ("Play", [.string("now")]),
                ]
                for (method, arguments) in wrongArguments {
                    #expect(await d.errorName { try await d.call(method, arguments) } == DBusErrors.invalidArgs,
                            "\(method)(\(arguments))")
                }
                #expect(await d.errorName { try await d.set("Volume", .string("loud")) } == DBusErrors.invalidArgs)
                #expect(await d.errorName { try await d.set("Shuffle", .int32(1)) } == DBusErrors.invalidArgs)
                #expect(await d.errorName {
                    try await d.call("Get", [.string(MPRIS.player)], interface: MPRIS.properties)
                } == DBusErrors.invalidArgs)

                #expect(await d.errorName { try await d.call("Frobnicate") } == DBusErrors.unknownMethod)
                #expect(await d.errorName { try await d.call("Frobnicate", interface: MPRIS.root) } == DBusErrors.unknownMethod)
                let unknownInterface = await d.errorName { try await d.call("Play", interface: "org.example.Nope") }
                #expect(unknownInterface == DBusErrors.unknownInterface || unknownInterface == DBusErrors.unknownMethod,
                        "method of an unknown interface: \(String(describing: unknownInterface))")
                #expect(await d.errorName { try await d.get("Nope") } == DBusErrors.unknownProperty)
                let noInterface = await d.errorName { try await d.get("Volume", interface: "org.example.Nope") }
                #expect(noInterface == DBusErrors.unknownInterface || noInterface == DBusErrors.invalidArgs,
                        "Get on an unknown interface: \(String(describing: noInterface))")
                #expect(await d.errorName { try await d.getAll("org.example.Nope") } != nil)

                for (name, value) in [("PlaybackStatus", DBusValue.string("Paused")), ("Position", .int64(0)),
                                      ("Metadata", .emptyVardict), ("CanControl", .boolean(false)),
                                      ("MaximumRate", .double(10))] {
                    #expect(await d.errorName { try await d.set(name, value) } == DBusErrors.propertyReadOnly, "Set \(name)")
                }
                #expect(await d.errorName { try await d.set("Identity", .string("Nope"), interface: MPRIS.root) }
                        == DBusErrors.propertyReadOnly)
                #expect(await d.errorName { try await d.set("Nope", .boolean(true)) } == DBusErrors.unknownProperty)

                // Still alive, still playing the same file, nothing announced, no Seeked.
                try await d.signals.barrier()
                #expect(d.daemon.isRunning)
                #expect(try await d.status() == "Playing")
                #expect(try await d.currentURL() == url)
                #expect(try await d.trackID() == track)
                #expect(try await d.get("Identity", interface: MPRIS.root) == .string("Lectern"))
                #expect(try await d.get("Volume") == .double(1))
                #expect(try await d.get("Rate") == .double(1))
                #expect(d.signals.playerChanges(since: mark).isEmpty, "\(d.signals.playerChanges(since: mark))")
                #expect(d.signals.seeked(since: mark).isEmpty)
                let before = try await d.position()
                #expect(try await d.waitForPosition(atLeast: before + 200_000) >= before + 200_000, "still playing")
            }
        }

        @Test func openUriOfSomethingUnplayableFailsAndChangesNothing() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Prerolled and playing, and read by the media reader (which changes Metadata): before the mark.
                _ = try await d.waitForPosition(atLeast: 1)
                try await d.waitForTracksDiscovered()
                let url = try await d.currentURL()
                let track = try await d.trackID()
                let mark = d.signals.mark

                let missing = d.directory.appending("no-such-book.mp3")
                let bad = [
                    MediaLibrary.uri(missing),
                    "file:///etc/passwd",
                    "http://example.com/x.mp3",
                    "",
                    "relative/path",
                    "relative/path.ogg",
                    MediaLibrary.uri(d.media.emptyFolder),
                    "file://otherhost/etc/x.ogg",
                ]
                for uri in bad {
                    let error = await d.errorName { try await d.call("OpenUri", [.string(uri)]) }
                    #expect(error != nil, "OpenUri(\"\(uri)\") must fail")
                    #expect(try await d.currentURL() == url, "after OpenUri(\"\(uri)\")")
                    #expect(try await d.status() == "Playing", "after OpenUri(\"\(uri)\")")
                }
                let viaPlayerctl = try await d.playerctl("open", "http://example.com/x.mp3")
                _ = viaPlayerctl  // playerctl may or may not report the error; the state is what matters.

                try await d.signals.barrier()
                #expect(d.signals.values(of: "Metadata", since: mark).isEmpty)
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty)
                #expect(try await d.trackID() == track)
                #expect(try await d.currentURL() == url)
                let before = try await d.position()
                #expect(try await d.waitForPosition(atLeast: before + 200_000) >= before + 200_000, "still playing")
            }
        }
    }
}
