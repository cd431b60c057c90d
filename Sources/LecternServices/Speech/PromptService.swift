import DBus
import LecternConfiguration
import LecternCore
import LecternSpeech
import Synchronization

/// `org.lectern.Prompts1` on /org/lectern/Lectern1: spoken prompts on or off, their voice, the speech engine's
/// problem, and the status spoken on request. Documented in dbus/org.lectern.Prompts1.xml.
public final class PromptService: Sendable {
    public static let interface = "org.lectern.Prompts1"

    /// Set once the object is exported.
    private let object = Mutex<ExportedObject?>(nil)
    /// The engine's problem as last reported ("" while it works): it may come before the object is exported.
    private let problem = Mutex("")

    public init() {}

    public func publish(on object: ExportedObject, prompter: Prompter) async {
        let (enabled, voice) = (await prompter.enabled, await prompter.voice)
        self.object.withLock { $0 = object }
        object.update(Self.interface, ["Enabled": .boolean(enabled), "Problem": .string(problem.withLock { $0 })]
            .merging(Self.voiceProperties(voice)) { $1 })
    }

    /// The prompter's report of its engine: nil when it works.
    public func problemChanged(_ problem: String?) {
        self.problem.withLock { $0 = problem ?? "" }
        object.withLock { $0 }?.update(Self.interface, ["Problem": .string(problem ?? "")])
    }

    /// On or off, from a client or a reloaded configuration.
    public func setEnabled(_ enabled: Bool, prompter: Prompter) async {
        await prompter.setEnabled(enabled)
        object.withLock { $0 }?.update(Self.interface, ["Enabled": .boolean(enabled)])
    }

    public func setVoice(_ voice: SpeechVoice, prompter: Prompter) async {
        await prompter.setVoice(voice)
        object.withLock { $0 }?.update(Self.interface, Self.voiceProperties(voice))
    }

    /// A voice a client set: refused when espeak-ng does not have it.
    private func setKnownVoice(_ voice: SpeechVoice, prompter: Prompter) async throws {
        if let unknown = EspeakSpeech.unknown(voice) { throw BusError.invalidArgs(unknown) }
        await setVoice(voice, prompter: prompter)
    }

    private static func voiceProperties(_ voice: SpeechVoice) -> [String: DBusValue] {
        ["Language": .string(voice.language), "Voice": .string(voice.variant ?? "")]
    }

    public func makeInterface(prompter: Prompter) -> Interface {
        Interface(Self.interface,
            methods: [
                Method("Say", in: [("what", .string)], out: [("text", .string)]) { call in
                    let what: String = try call.argument(0)
                    guard let request = Prompter.Request(rawValue: what.isEmpty ? "status" : what) else {
                        let allowed = Prompter.Request.allCases.map(\.rawValue).joined(separator: ", ")
                        throw ListeningService.invalidArgument("Say takes \(allowed) (or \"\" for status), not \"\(what)\"")
                    }
                    return [.string(await prompter.say(request))]
                },
            ],
            properties: [
                Property("Enabled", .boolean, access: .readwrite, set: { [self] value in
                    await setEnabled(try value.decoded(), prompter: prompter)
                }),
                Property("Language", .string, access: .readwrite, set: { [self] value in
                    let language: String = try value.decoded()
                    guard !language.isEmpty, Settings.isVoiceName(language, allowing: "-") else {
                        throw BusError.invalidArgs("Language is \(Setting.promptLanguage.allowed), not \"\(language)\"")
                    }
                    var voice = await prompter.voice
                    voice.language = language
                    try await setKnownVoice(voice, prompter: prompter)
                }),
                Property("Voice", .string, access: .readwrite, set: { [self] value in
                    let variant: String = try value.decoded()
                    guard Settings.isVoiceName(variant, allowing: "") else {
                        throw BusError.invalidArgs("Voice is \(Setting.promptVoice.allowed), not \"\(variant)\"")
                    }
                    var voice = await prompter.voice
                    voice.variant = variant.isEmpty ? nil : variant
                    try await setKnownVoice(voice, prompter: prompter)
                }),
                Property("Problem", .string),
            ])
    }
}
