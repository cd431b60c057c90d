import DBus
import Foundation
import Testing
import TestSupport

/// Being played to (issue 36): Rygel's MPRIS plugin makes lecternd a UPnP MediaRenderer named by its Identity, and a
/// UPnP control point (GUPnP) drives it with a stream from an HTTP server. Every peer is real, and runs in a network
/// namespace the test makes (``PlayedToRig``): nothing UPnP runs in the machine's own.
@Suite(.serialized)
struct PlayedToTests {
    /// A book paused at its place; a control point pushes a stream, plays, pauses, seeks and sets the volume; the
    /// MPRIS state matches what it reads; an undo returns to the book, where it was.
    @Test func aControlPointPlaysAStreamAndTheBookWaitsAtItsPlace() async throws {
        try await PlayedToRig.with { rig in
            try await rig.call("OpenUri", [.string(rig.book.absoluteString)])
            #expect(try await rig.waitForStatus("Playing") == "Playing")
            try await rig.waitForPosition(atLeast: 1_000_000)
            try await rig.call("Pause")
            #expect(try await rig.waitForStatus("Paused") == "Paused")
            let bookTrack = try await rig.metadata()["mpris:trackid"]?.objectPath
            let bookPlace = try await rig.position()

            // The renderer offers http-get for the types GStreamer plays.
            let sink = try await rig.upnpOK(.init(service: "ConnectionManager", action: "GetProtocolInfo", out: ["Sink"]))["Sink"] ?? ""
            #expect(sink.contains("http-get:*:audio/ogg:*"), "\(sink)")
            #expect(sink.contains("http-get:*:audio/mpeg:*"), "\(sink)")

            // SetAVTransportURI: the stream replaces the book, paused as the book was, for the control point's Play.
            try await rig.upnpOK(.avTransport("SetAVTransportURI", ["CurrentURI": rig.streamURI, "CurrentURIMetaData": ""]))
            let opened = try await rig.waitFor("Metadata") { $0.stringKeyedDictionary?["xesam:url"]?.string == rig.streamURI }
            #expect(opened.stringKeyedDictionary?["xesam:url"]?.string == rig.streamURI)
            #expect(try await rig.get("PlaybackStatus").string == "Paused")
            try await rig.upnpOK(.avTransport("Play", ["Speed": "1"]))
            #expect(try await rig.waitForStatus("Playing") == "Playing")
            #expect(try await rig.waitForPosition(atLeast: 500_000) >= 500_000, "the stream plays")
            #expect(try await rig.upnpOK(.avTransport("GetTransportInfo", out: ["CurrentTransportState"]))["CurrentTransportState"] == "PLAYING")

            // Its metadata: its URL, its own title, its length; it can be moved in (the server allows ranges).
            let titled = try await rig.waitFor("Metadata") { $0.stringKeyedDictionary?["xesam:title"]?.string == PlayedToRig.streamTitle }
            let metadata = titled.stringKeyedDictionary ?? [:]
            #expect(metadata["xesam:title"]?.string == PlayedToRig.streamTitle)
            let length = try #require(metadata["mpris:length"]?.int64)
            #expect(abs(length - Int64(PlayedToRig.streamSeconds * 1_000_000)) < 300_000, "mpris:length \(length)")
            #expect(try await rig.get("CanSeek").bool == true)

            // Pause and Play again, as the control point sees them too.
            try await rig.upnpOK(.avTransport("Pause"))
            #expect(try await rig.waitForStatus("Paused") == "Paused")
            #expect(try await rig.upnpOK(.avTransport("GetTransportInfo", out: ["CurrentTransportState"]))["CurrentTransportState"]
                    == "PAUSED_PLAYBACK")
            try await rig.upnpOK(.avTransport("Play", ["Speed": "1"]))
            #expect(try await rig.waitForStatus("Playing") == "Playing")

            // Seek (REL_TIME): Rygel seeks by the difference from Position, through MPRIS's relative Seek.
            try await rig.upnpOK(.avTransport("Seek", ["Unit": "REL_TIME", "Target": "0:00:20"]))
            #expect(try await rig.waitForPosition(atLeast: 20_000_000) >= 20_000_000)
            // The Seeked goes out with the move, but reaches the test's recorder by a task of its own: up to 2 s later.
            // It says 20 s and the time between Rygel's read of Position and its relative Seek, playing (up to 0.5 s
            // on a loaded machine).
            func toldAt20() -> Bool { rig.seeked.positions.withLock { $0.contains { abs($0 - 20_000_000) < 500_000 } } }
            let told = ContinuousClock.now + .seconds(2)
            while !toldAt20(), ContinuousClock.now < told { try await Task.sleep(for: .milliseconds(20)) }
            #expect(toldAt20(), "Seeked: \(rig.seeked.positions.withLock { $0 })")

            // GetPositionInfo reads MPRIS Position and mpris:length: RelTime within the positions read around it.
            let before = try await rig.position()
            let info = try await rig.upnpOK(.avTransport("GetPositionInfo", out: ["RelTime", "TrackDuration", "TrackURI"]))
            let after = try await rig.position()
            let relTime = try #require(upnpTime(info["RelTime"]), "RelTime \(info)")
            #expect(relTime >= before - 1_000 && relTime <= after + 1_000, "RelTime \(relTime) µs, Position \(before)...\(after) µs")
            #expect(abs((upnpTime(info["TrackDuration"]) ?? 0) - length) <= 1_000, "TrackDuration \(info)")
            #expect(info["TrackURI"] == rig.streamURI)

            // SetVolume on RenderingControl's 0-100 is MPRIS Volume on 0-1.
            try await rig.upnpOK(.renderingControl("SetVolume", ["DesiredVolume": "50"]))
            #expect(try await rig.waitFor("Volume") { $0.double == 0.5 }.double == 0.5)
            #expect(try await rig.upnpOK(.renderingControl("GetVolume", out: ["CurrentVolume"]))["CurrentVolume"] == "50")

            // The stream is not a book; undo returns to the book, where it was paused, playing as the stream was.
            let books = try await rig.lectern("book", "list", "--json")
            #expect(books.status == 0)
            #expect(!books.stdout.contains("stream"), "the stream became a book: \(books.stdout)")
            let undo = try await rig.lectern("undo")
            #expect(undo.status == 0, "\(undo)")
            let back = try await rig.waitFor("Metadata") { $0.stringKeyedDictionary?["mpris:trackid"]?.objectPath == bookTrack }
            #expect(back.stringKeyedDictionary?["xesam:url"]?.string == rig.book.absoluteString)
            let resumed = try await rig.position()
            #expect(resumed >= bookPlace - 100_000 && resumed < bookPlace + 10_000_000, "the book at \(resumed) µs, left at \(bookPlace) µs")
            #expect(try await rig.get("PlaybackStatus").string == "Playing")
        }
    }

    /// A live stream (no ranges, no length): it plays, CanSeek is false, and the control point's Seek is refused (710).
    @Test func aLiveStreamPlaysAndCannotBeMovedIn() async throws {
        try await PlayedToRig.with(ranges: false) { rig in
            try await rig.upnpOK(.avTransport("SetAVTransportURI", ["CurrentURI": rig.streamURI, "CurrentURIMetaData": ""]))
            try await rig.waitFor("Metadata") { $0.stringKeyedDictionary?["xesam:url"]?.string == rig.streamURI }
            #expect(try await rig.waitForStatus("Playing") == "Playing", "nothing was paused: the stream plays")
            try await rig.waitForPosition(atLeast: 500_000)
            #expect(try await rig.get("CanSeek").bool == false)
            let seek = try await rig.upnp(.avTransport("Seek", ["Unit": "REL_TIME", "Target": "0:00:20"]))
            #expect(seek.first?.ok == false && seek.first?.code == 710, "\(seek)")
            #expect(try await rig.position() < 20_000_000)
            #expect(try await rig.get("PlaybackStatus").string == "Playing")
        }
    }
}
