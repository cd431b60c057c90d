import DBus

/// What the client reads of org.lectern.Prompts1.
public struct Prompts1: Sendable {
    public let said = Decoding<String>.reply(.prompts, "Say", "text")
    public let enabled = Decoding<Bool>.property(.prompts, "Enabled")
    public let language = Decoding<String>.property(.prompts, "Language")
    public let voice = Decoding<String>.property(.prompts, "Voice")
    public let problem = Decoding<String>.property(.prompts, "Problem")
}
