import Foundation
import LecternCore
import Testing

/// A route source for tests: what the daemon's output watcher would report, one event at a time.
enum FakeRoute: Sendable {
    case lost(String, OutputPolicy<ManualClock.Instant>.LossReason = .removed)
    case returned(String)
    case serverLost
    /// The server is back; `withOutput`: the output lost with it ("speakers") is among its sinks already.
    case serverReturned(withOutput: Bool = true)
    case other
}

/// Feeds a ``FakeRoute`` source into the policy the way the daemon does (the player says whether it plays and
/// whether its pause is still the route's; a lost server is first the player's, `soundServerLost`), applies the
/// decisions to a real ``Player`` on the fake engine, and keeps time on a manual clock.
struct RouteDriver {
    var policy: OutputPolicy<ManualClock.Instant>
    let harness: Harness
    let clock = ManualClock()

    init(_ harness: Harness, mode: OutputPolicyMode = .pauseAndResume, window: Duration = .seconds(30 * 60)) {
        self.harness = harness
        policy = OutputPolicy(mode: mode, resumeWindow: window)
    }

    var player: Player { harness.player }

    /// Delivers one route event; returns what the policy decided (and what the player did about it).
    @discardableResult
    mutating func send(_ event: FakeRoute) async -> OutputPolicy<ManualClock.Instant>.Decision {
        if case .serverLost = event {
            // The player lets the dead server's stream go, pausing if it played, before the policy hears of it.
            let paused = await player.soundServerLost("Connection terminated")
            return policy.handle(.lost(output: "speakers", reason: .serverLost, playing: paused), at: clock.now)
        }
        let playing = await player.isPlayingOrInterrupted  // as the daemon's watcher asks
        let untouched = await player.isPausedForLostOutput
        let input: OutputPolicy<ManualClock.Instant>.Input = switch event {
        case .lost(let output, let reason): .lost(output: output, reason: reason, playing: playing)
        case .returned(let output): .returned(output: output, untouched: untouched)
        case .serverLost: .other  // above
        case .serverReturned(let withOutput): .serverReturned(outputPresent: withOutput, untouched: untouched)
        case .other: .other
        }
        let decision = policy.handle(input, at: clock.now)
        switch decision {
        case .pause: if !(await player.pauseForLostOutput()) { policy.forget() }
        case .resume: await player.resumeForReturnedOutput()
        case .nothing: break
        }
        return decision
    }

    func advance(by duration: Duration) { clock.advance(by: duration) }
    var status: PlaybackStatus { get async { await player.snapshot.status } }
}

/// Opens three items, ready and playing at 42 s.
private func playing(_ harness: Harness) async {
    await harness.player.open(makeItems(3), position: .seconds(42))
    await harness.ready()
    #expect(await harness.player.snapshot.status == .playing)
}

@Suite struct OutputPolicyTests {
    // MARK: - With the player

    @Test func lossPausesAndReturnWithinTheWindowResumesWhereItWas() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.lost("headphones")) == .pause)
            #expect(await route.status == .paused)
            #expect(await h.player.isPausedForLostOutput)
            let saved = await h.player.position
            route.advance(by: .seconds(29 * 60))
            #expect(await route.send(.returned("headphones")) == .resume)
            #expect(await route.status == .playing)
            #expect(await h.player.position == saved)
            #expect(route.policy.pending == nil)
        }
    }

    /// PulseAudio moves a stream whose sink went away to another one, dropping what it buffered: the stream comes back
    /// past the place it paused at (1.6 s, measured). What was never heard is played: the engine seeks back there.
    @Test func theReturnPlaysFromThePlaceEvenWhenTheStreamGotFurther() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await h.outputPlays()
            #expect(await route.send(.lost("headphones")) == .pause)
            let saved = await h.player.position
            h.engine.answer(saved + .milliseconds(1_600))
            h.reset()
            #expect(await route.send(.returned("headphones")) == .resume)
            #expect(h.engine.calls.contains(.seek(saved)), "\(h.engine.calls)")
            await h.outputPlays()
            #expect(h.positionClock.anchor == saved + Player.clockPollInterval)
        }
    }

    @Test func returnAfterTheWindowDoesNotResume() async {
        await withHarness { h in
            var route = RouteDriver(h, window: .seconds(60))
            await playing(h)
            await route.send(.lost("headphones"))
            route.advance(by: .seconds(61))
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .paused)
        }
    }

    @Test func theWindowEndsByTimeAlone() async {
        await withHarness { h in
            var route = RouteDriver(h, window: .seconds(60))
            await playing(h)
            await route.send(.lost("headphones"))
            route.advance(by: .seconds(59))
            route.policy.expire(at: route.clock.now)
            #expect(route.policy.pending?.output == "headphones")
            route.advance(by: .seconds(2))
            route.policy.expire(at: route.clock.now)
            #expect(route.policy.pending == nil)
        }
    }

    @Test func aUserCommandInBetweenCancelsTheResume() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await route.send(.lost("headphones"))
            await h.player.pause()  // the user, while the route's pause lasts
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .paused)
        }
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await route.send(.lost("headphones"))
            await h.player.seek(by: .seconds(10))  // any command, not only Pause
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .paused)
        }
    }

    @Test func theUserPlayingElsewhereThenLosingThatOutputPausesAgain() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await route.send(.lost("headphones"))
            await h.player.play()  // on the speakers the server moved the stream to
            #expect(await route.send(.lost("speakers")) == .pause)
            #expect(route.policy.pending?.output == "speakers")
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .paused)
            #expect(await route.send(.returned("speakers")) == .resume)
            #expect(await route.status == .playing)
        }
    }

    @Test func pauseOnlyNeverResumes() async {
        await withHarness { h in
            var route = RouteDriver(h, mode: .pauseOnly)
            await playing(h)
            #expect(await route.send(.lost("headphones")) == .pause)
            #expect(await route.status == .paused)
            #expect(route.policy.pending?.output == "headphones")  // its return is still recognised
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(route.policy.pending == nil)
            #expect(await route.status == .paused)
            #expect(await route.send(.serverLost) == .nothing)  // paused: nothing to do
            await h.player.play()
            #expect(await route.send(.serverLost) == .pause)
            #expect(await route.send(.serverReturned()) == .nothing)
            #expect(await route.status == .paused)
        }
    }

    @Test func offDoesNothing() async {
        await withHarness { h in
            var route = RouteDriver(h, mode: .off)
            await playing(h)
            #expect(await route.send(.lost("headphones")) == .nothing)
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .playing)
            // A dead server is no route change to ignore: the stream died with it, and the player pauses as for a
            // failed output. Off, nothing resumes it.
            #expect(await route.send(.serverLost) == .nothing)
            #expect(await route.status == .paused)
            #expect(await route.send(.serverReturned()) == .nothing)
            #expect(await route.status == .paused)
        }
    }

    @Test func lossWhileNotPlayingDoesNothingAndReturnDoesNotStartPlayback() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await h.player.pause()
            #expect(await route.send(.lost("headphones")) == .nothing)
            #expect(route.policy.pending == nil)
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .paused)
        }
    }

    @Test func theSameLossReportedTwiceActsOnceAndSoDoesTheReturn() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.lost("headphones")) == .pause)   // the stream moved off the sink
            #expect(await route.send(.lost("headphones")) == .nothing) // the sink's removal, a few ms later
            #expect(await route.send(.returned("headphones")) == .resume)
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.status == .playing)
        }
    }

    @Test func otherSinkEventsNeverAct() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.other) == .nothing)
            #expect(await route.send(.returned("usb-dac")) == .nothing)
            await route.send(.lost("headphones"))
            #expect(await route.send(.other) == .nothing)
            #expect(await route.send(.returned("usb-dac")) == .nothing)
            #expect(await route.status == .paused)
            #expect(route.policy.pending?.output == "headphones")
        }
    }

    @Test func aJackPortLossAndReturn() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.lost("card#analog-output-headphones", .portUnavailable)) == .pause)
            #expect(route.policy.pending?.reason == .portUnavailable)
            #expect(await route.send(.returned("card#analog-output-headphones")) == .resume)
            #expect(await route.status == .playing)
        }
    }

    @Test func serverLostPausesAndItsReturnResumes() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.serverLost) == .pause)
            #expect(await route.status == .paused)
            // A sink called like the lost output appearing is not the server coming back.
            #expect(await route.send(.returned("speakers")) == .nothing)
            #expect(await route.send(.serverReturned()) == .resume)
            #expect(await route.status == .playing)
        }
        await withHarness { h in
            // The server is back before the output it played to: resuming waits for that output.
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.serverLost) == .pause)
            #expect(await route.send(.serverReturned(withOutput: false)) == .nothing)
            #expect(await route.status == .paused)
            #expect(await route.send(.returned("headphones")) == .nothing)
            #expect(await route.send(.returned("speakers")) == .resume)
            #expect(await route.status == .playing)
        }
        await withHarness { h in
            // ... within the same window, counted from the loss.
            var route = RouteDriver(h, window: .seconds(60))
            await playing(h)
            await route.send(.serverLost)
            route.advance(by: .seconds(30))
            #expect(await route.send(.serverReturned(withOutput: false)) == .nothing)
            route.advance(by: .seconds(31))
            #expect(await route.send(.returned("speakers")) == .nothing)
            #expect(await route.status == .paused)
        }
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await route.send(.serverLost)
            await h.player.pause()
            #expect(await route.send(.serverReturned()) == .nothing)
            #expect(await route.status == .paused)
        }
    }

    @Test func changingTheModeOrTheWindowWhilePaused() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await route.send(.lost("headphones"))
            route.policy.mode = .off  // forgets the pending resume
            route.policy.mode = .pauseAndResume
            #expect(route.policy.pending == nil)
            #expect(await route.send(.returned("headphones")) == .nothing)
        }
        await withHarness { h in
            var route = RouteDriver(h, mode: .pauseOnly)
            await playing(h)
            await route.send(.lost("headphones"))
            route.policy.mode = .pauseAndResume  // changed before the return: the return resumes
            #expect(await route.send(.returned("headphones")) == .resume)
        }
        await withHarness { h in
            var route = RouteDriver(h, window: .seconds(3600))
            await playing(h)
            await route.send(.lost("headphones"))
            route.advance(by: .seconds(120))
            route.policy.resumeWindow = .seconds(60)
            #expect(await route.send(.returned("headphones")) == .nothing)
        }
    }

    // MARK: - The value alone

    // MARK: - The server lost, and the engine's own failure, in either order

    /// What a `pipewire` restart did one time in ten: the server's loss heard (and the player paused) before
    /// pulsesink noticed its dead connection. The resume must not play that stream on: it would fail ("Disconnected:
    /// Connection terminated") and leave the player paused after a "resumed".
    @Test func theServerLostBeforeTheEngineNoticedResumesByLoadingAgainWhereItWas() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            h.engine.advance(by: .seconds(2))
            h.reset()
            #expect(await route.send(.serverLost) == .pause)
            #expect(await route.status == .paused)
            #expect(h.engine.calls == [.stop], "the dead stream is let go")
            #expect(await h.player.position == .seconds(44))
            // pulsesink's error, queued before the stream was let go, changes nothing.
            await h.send(.outputFailed("Disconnected: Connection terminated"))
            #expect(await route.status == .paused)
            #expect(await h.player.position == .seconds(44))

            #expect(await route.send(.serverReturned()) == .resume)
            #expect(Array(h.engine.calls.prefix(2)) == [.stop, .load(fileURL(0), at: .seconds(44))], "\(h.engine.calls)")
            await h.ready()
            #expect(h.engine.isPlaying)
            #expect(await route.status == .playing)
        }
    }

    @Test func theEngineFailingBeforeTheServerIsHeardLostIsTheSamePauseAndResume() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            h.engine.advance(by: .seconds(2))
            await h.send(.outputFailed("pa_stream_writable_size() failed: Connection terminated"))
            #expect(await route.status == .paused)
            h.reset()
            #expect(await route.send(.serverLost) == .pause, "the engine's pause is the server's loss")
            #expect(h.engine.calls.isEmpty)
            #expect(await route.send(.serverReturned()) == .resume)
            #expect(h.engine.calls.first == .load(fileURL(0), at: .seconds(44)))
            await h.ready()
            #expect(h.engine.isPlaying)
        }
    }

    @Test func theServerLostWhilePausedByTheListenerLoadsAgainAtTheirPlay() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            await h.player.pause()
            h.reset()
            #expect(await route.send(.serverLost) == .nothing)
            #expect(await route.send(.serverReturned()) == .nothing)
            #expect(await route.status == .paused)
            await h.player.play()
            #expect(Array(h.engine.calls.prefix(2)) == [.stop, .load(fileURL(0), at: .seconds(42))], "\(h.engine.calls)")
        }
    }

    @Test func anUnplugsPauseOutlastsTheServersLossAndOnlyItsReturnResumes() async {
        await withHarness { h in
            var route = RouteDriver(h)
            await playing(h)
            #expect(await route.send(.lost("headphones")) == .pause)
            h.reset()
            #expect(await route.send(.serverLost) == .nothing)
            #expect(await route.send(.serverReturned()) == .nothing)
            #expect(await route.status == .paused)
            #expect(await route.send(.returned("headphones")) == .resume)
            #expect(await route.status == .playing)
            #expect(Array(h.engine.calls.prefix(2)) == [.stop, .load(fileURL(0), at: .seconds(42))], "\(h.engine.calls)")
        }
    }

    @Test func modesHaveTheirCommandLineNames() {
        #expect(OutputPolicyMode.allCases.map(\.rawValue) == ["pause-and-resume", "pause-only", "off"])
        #expect(OutputPolicy<ManualClock.Instant>().mode == .pauseAndResume)
        #expect(OutputPolicy<ManualClock.Instant>().resumeWindow == .seconds(1800))
    }

    @Test func decisionsWithoutAPlayer() {
        var policy = OutputPolicy<ManualClock.Instant>()
        let t0 = ManualClock.Instant(offset: .zero)
        #expect(policy.handle(.returned(output: "a", untouched: true), at: t0) == .nothing)
        #expect(policy.handle(.serverReturned(outputPresent: true, untouched: true), at: t0) == .nothing)
        #expect(policy.handle(.lost(output: "a", reason: .removed, playing: true), at: t0) == .pause)
        #expect(policy.handle(.returned(output: "a", untouched: false), at: t0.advanced(by: .seconds(1))) == .nothing)
        #expect(policy.pending == nil)
        #expect(policy.handle(.lost(output: "a", reason: .removed, playing: true), at: t0) == .pause)
        #expect(policy.handle(.returned(output: "a", untouched: true), at: t0.advanced(by: .seconds(1800))) == .resume)
        #expect(policy.handle(.lost(output: "a", reason: .removed, playing: true), at: t0) == .pause)
        policy.forget()
        #expect(policy.handle(.returned(output: "a", untouched: true), at: t0) == .nothing)
    }
}
