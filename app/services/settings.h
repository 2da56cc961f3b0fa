// Settings holds the user's preferences in an INI file (QSettings) and keeps secrets (the hub
// access token, the server's API key) in separate owner-only files beside it.
#pragma once

#include "services/service_types.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <memory>

class QSettings;

namespace hearth::app {

class Settings : public QObject {
    Q_OBJECT
public:
    static constexpr int kDefaultServerPort = 8642;

    // `iniPath` empty: hearth.ini in the user's configuration folder. Tests pass a temporary file.
    explicit Settings(const QString& iniPath = {}, QObject* parent = nullptr);
    ~Settings() override;

    QString filePath() const;

    // Where downloaded and imported models go (default: "models" beside the settings file, so
    // one data folder holds settings, chats and the library).
    QString modelsFolder() const;
    void setModelsFolder(const QString& folder);

    // The Hugging Face hub (or a mirror); only http and https URLs are accepted. $HEARTH_HUB_URL,
    // when set to such a URL, takes precedence over the stored one (as for hearth-cli pull).
    QUrl hubBaseUrl() const;
    bool setHubBaseUrl(const QUrl& url);

    // The hub access token, kept in its own file readable only by the owner (0600).
    // Setting an empty token deletes the file. False (see lastError()) when it cannot be written.
    QString accessToken() const;
    bool setAccessToken(const QString& token);
    QString accessTokenPath() const;

    // The local OpenAI-compatible server.
    QString serverHost() const; // default 127.0.0.1 (this machine only)
    void setServerHost(const QString& host);
    int serverPort() const;
    bool setServerPort(int port); // 1..65535
    QString serverApiKey() const; // a secret file like the token; empty: no key required
    bool setServerApiKey(const QString& key);
    QString serverApiKeyPath() const;

    // Defaults for loading a model.
    LoadSettings loadSettings() const;
    void setLoadSettings(const LoadSettings& settings);

    int parallelDownloads() const; // default 1
    void setParallelDownloads(int n);

    // The sampling new chats use (the settings page edits it).
    Sampling chatSampling() const;
    void setChatSampling(const Sampling& sampling);
    QString defaultSystemPrompt() const;
    void setDefaultSystemPrompt(const QString& text);

    // Origins the embedded server allows browser requests from ("*": any).
    QStringList corsOrigins() const;
    void setCorsOrigins(const QStringList& origins);

    // Minutes a loaded model may sit idle before the app unloads it (0: never).
    int idleUnloadMinutes() const;
    void setIdleUnloadMinutes(int minutes);

    // "system" (follow the desktop), "light" or "dark".
    QString theme() const;
    void setTheme(const QString& theme);

    // Whether the welcome page was shown and dismissed (or a model was chosen from it).
    bool welcomeDone() const;
    void setWelcomeDone(bool done);

    // The model last loaded in the chat (loaded again at start when autoload is on).
    QString lastModelPath() const;
    void setLastModelPath(const QString& path);
    // The embedding model that searches long files in chats by meaning ("": by words only).
    QString embeddingModelPath() const;
    void setEmbeddingModelPath(const QString& path);
    // The draft model chosen for the model at modelPath ("" = none): kept per model, since a
    // draft pairs with one vocabulary.
    QString draftModelFor(const QString& modelPath) const;
    void setDraftModelFor(const QString& modelPath, const QString& draftPath);

    QString lastError() const { return m_lastError; }
    // Writes pending changes to disk now (they are also written on destruction).
    void sync();

Q_SIGNALS:
    void changed(const QString& key);

private:
    QString secretPath(const QString& name) const;
    QString readSecret(const QString& name) const;
    bool writeSecret(const QString& name, const QString& value);
    void setValue(const QString& key, const QVariant& value);

    std::unique_ptr<QSettings> m_settings;
    QString m_lastError;
};

} // namespace hearth::app
