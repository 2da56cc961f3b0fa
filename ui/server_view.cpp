// Server page: the embedded server's options (saved through Settings), its state and its request
// log, which ServerControl delivers on the GUI thread.
#include "server_view.h"


#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTime>
#include <QVBoxLayout>

namespace hearth::ui {

ServerView::ServerView(app::Settings* settings, app::EngineHost* engine, app::ServerControl* control, QWidget* parent)
    : QWidget(parent), m_settings(settings), m_engine(engine), m_control(control) {
    m_port = new QSpinBox(this);
    m_port->setRange(1, 65535);
    m_port->setValue(m_settings->serverPort());
    m_apiKey = new QLineEdit(m_settings->serverApiKey(), this);
    m_apiKey->setEchoMode(QLineEdit::PasswordEchoOnEdit);
    m_apiKey->setPlaceholderText(tr("none (anyone who can reach the port may use it)"));
    m_cors = new QLineEdit(m_settings->corsOrigins().join(QStringLiteral(", ")), this);
    m_cors->setPlaceholderText(tr("browser origins allowed, comma separated (empty: none)"));
    m_lan = new QCheckBox(tr("Reachable from other machines on the network (0.0.0.0)"), this);
    m_lan->setChecked(m_settings->serverHost() == QStringLiteral("0.0.0.0"));
    m_warning = new QLabel(this);
    m_warning->setWordWrap(true);
    m_warning->setStyleSheet(QStringLiteral("color: #c0392b"));
    m_state = new QLabel(this);
    m_toggle = new QPushButton(this);
    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(2000);
    m_examples = new QPlainTextEdit(this);
    m_examples->setReadOnly(true);
    m_examples->setMaximumHeight(150);
    auto* copy = new QPushButton(tr("Copy examples"), this);

    auto* form = new QFormLayout();
    form->addRow(tr("Port"), m_port);
    form->addRow(tr("API key"), m_apiKey);
    form->addRow(tr("CORS origins"), m_cors);
    form->addRow(QString(), m_lan);
    form->addRow(QString(), m_warning);
    auto* row = new QHBoxLayout();
    row->addWidget(m_state, 1);
    row->addWidget(m_toggle);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(row);
    layout->addWidget(new QLabel(tr("Requests"), this));
    layout->addWidget(m_log, 1);
    layout->addWidget(m_examples);
    layout->addWidget(copy, 0, Qt::AlignRight);

    connect(m_toggle, &QPushButton::clicked, this, [this] {
        if (isRunning()) stop();
        else start();
    });
    connect(copy, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(m_examples->toPlainText()); });
    connect(m_lan, &QCheckBox::toggled, this, [this](bool on) {
        m_settings->setServerHost(on ? QStringLiteral("0.0.0.0") : QStringLiteral("127.0.0.1"));
        updateState();
    });
    connect(m_port, &QSpinBox::valueChanged, this, [this](int p) {
        m_settings->setServerPort(p);
        updateExamples();
    });
    connect(m_apiKey, &QLineEdit::editingFinished, this, [this] {
        m_settings->setServerApiKey(m_apiKey->text());
        updateExamples();
        updateState();
    });
    connect(m_cors, &QLineEdit::editingFinished, this, [this] {
        QStringList origins;
        for (const QString& o : m_cors->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) origins << o.trimmed();
        m_settings->setCorsOrigins(origins);
    });
    connect(m_engine, &app::EngineHost::loaded, this, [this] { updateState(); });
    connect(m_control, &app::ServerControl::logLine, this, &ServerView::appendLog);
    connect(m_control, &app::ServerControl::runningChanged, this, [this](bool running) {
        if (!running) appendLog(tr("stopped"));
        updateExamples();
        updateState();
    });
    updateExamples();
    updateState();
}

void ServerView::setPort(int port) {
    if (!isRunning()) m_port->setValue(port);
}

bool ServerView::start() {
    if (isRunning()) return true;
    app::ServerOptions o;
    o.host = m_lan->isChecked() ? QStringLiteral("0.0.0.0") : QStringLiteral("127.0.0.1");
    o.port = m_port->value();
    o.apiKey = m_apiKey->text();
    o.corsOrigins = m_cors->text().split(QLatin1Char(','), Qt::SkipEmptyParts);
    o.modelsFolder = m_settings->modelsFolder(); // every library model by name, loaded on first use
    QString error;
    if (!m_control->start(o, &error)) {
        Q_EMIT statusMessage(tr("Server did not start: %1").arg(error), StatusLevel::Error);
        appendLog(tr("start failed: %1").arg(error));
        return false;
    }
    return true;
}

void ServerView::stop() { m_control->stop(); }

QString ServerView::stateText() const { return m_state->text(); }

QString ServerView::logText() const { return m_log->toPlainText(); }

void ServerView::appendLog(const QString& line) {
    m_log->appendPlainText(QTime::currentTime().toString(QStringLiteral("HH:mm:ss ")) + line);
}

void ServerView::updateExamples() {
    const int p = isRunning() ? port() : m_port->value();
    const QString key = m_apiKey->text().isEmpty() ? QStringLiteral("none") : QStringLiteral("YOUR_KEY");
    QString auth = m_apiKey->text().isEmpty() ? QString() : QStringLiteral(" -H 'Authorization: Bearer YOUR_KEY'");
    m_examples->setPlainText(
        QStringLiteral("curl http://127.0.0.1:%1/v1/chat/completions -H 'Content-Type: application/json'%2 \\\n"
                       "  -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Hello!\"}]}'\n\n"
                       "from openai import OpenAI\n"
                       "client = OpenAI(base_url=\"http://127.0.0.1:%1/v1\", api_key=\"%3\")\n"
                       "print(client.chat.completions.create(model=\"local\",\n"
                       "      messages=[{\"role\": \"user\", \"content\": \"Hello!\"}]).choices[0].message.content)\n")
            .arg(p)
            .arg(auth, key));
}

void ServerView::updateState() {
    m_toggle->setText(isRunning() ? tr("Stop server") : tr("Start server"));
    m_port->setEnabled(!isRunning());
    m_lan->setEnabled(!isRunning());
    if (m_lan->isChecked() && m_apiKey->text().isEmpty())
        m_warning->setText(tr("Anyone on your network will be able to use this model: set an API key."));
    else if (m_lan->isChecked())
        m_warning->setText(tr("Other machines on your network can reach the server (with the API key)."));
    else
        m_warning->clear();
    if (!isRunning()) m_state->setText(tr("Stopped"));
    else if (!m_engine->isLoaded()) m_state->setText(tr("Running on port %1 — no model loaded (/health answers 503)").arg(port()));
    else if (m_engine->model().isRemote()) {
        // The chat goes to the provider; the server has no engine of ours to serve.
        const app::RemoteModelRef remote = app::remoteModelOf(m_engine->model().path);
        m_state->setText(tr("Running on port %1 — no local model loaded (the chat uses %2 on %3, remote; /health "
                            "answers 503)")
                             .arg(port())
                             .arg(remote.model, remote.provider));
    }
    else m_state->setText(tr("Running on port %1 — serving %2").arg(port()).arg(m_engine->model().path.section(QLatin1Char('/'), -1)));
}

} // namespace hearth::ui
