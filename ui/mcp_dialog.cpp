// McpDialog: the servers on the left, the chosen one's form, state and tools on the right.
#include "mcp_dialog.h"

#include "count_text.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {

// The command and its arguments as one line that QProcess::splitCommand reads back.
QString commandLine(const app::McpServerConfig& s) {
    QStringList parts;
    for (const QString& p : QStringList{s.command} + s.args) {
        if (p.isEmpty() || p.contains(QLatin1Char(' ')) || p.contains(QLatin1Char('\t')) || p.contains(QLatin1Char('"'))) {
            QString q = p;
            q.replace(QLatin1String("\""), QLatin1String("\"\"\""));
            parts << QLatin1Char('"') + q + QLatin1Char('"');
        } else {
            parts << p;
        }
    }
    return parts.join(QLatin1Char(' '));
}

const char* const kApprovalNames[] = {QT_TRANSLATE_NOOP("McpDialog", "Ask each time"),
                                      QT_TRANSLATE_NOOP("McpDialog", "Always run"),
                                      QT_TRANSLATE_NOOP("McpDialog", "Never run")};

} // namespace

McpDialog::McpDialog(app::McpHost* host, QWidget* parent) : QDialog(parent), m_host(host) {
    setWindowTitle(tr("MCP servers"));
    resize(860, 480);
    m_list = new QListWidget(this);
    m_list->setMaximumWidth(220);
    m_name = new QLineEdit(this);
    m_name->setPlaceholderText(tr("files"));
    m_command = new QLineEdit(this);
    m_command->setPlaceholderText(tr("npx -y @modelcontextprotocol/server-filesystem /home/me/notes"));
    m_url = new QLineEdit(this);
    m_url->setPlaceholderText(tr("or a streamable HTTP URL: http://127.0.0.1:3001/mcp"));
    m_disabled = new QCheckBox(tr("Turned off (kept, not started)"), this);
    m_state = new QLabel(this);
    m_state->setWordWrap(true);
    m_state->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_tools = new QTableWidget(0, 4, this);
    m_tools->setHorizontalHeaderLabels({tr("On"), tr("Tool"), tr("When the model calls it"), tr("What it does")});
    m_tools->horizontalHeader()->setStretchLastSection(true);
    m_tools->verticalHeader()->hide();
    m_tools->setSelectionMode(QAbstractItemView::NoSelection);
    m_tools->setEditTriggers(QAbstractItemView::NoEditTriggers);

    auto* form = new QFormLayout();
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Command"), m_command);
    form->addRow(tr("URL"), m_url);
    form->addRow(QString(), m_disabled);
    form->addRow(tr("State"), m_state);
    auto* add = new QPushButton(tr("New"), this);
    auto* importButton = new QPushButton(tr("Import…"), this);
    importButton->setToolTip(tr("Add the servers of a claude_desktop_config.json or an LM Studio mcp.json"));
    auto* remove = new QPushButton(tr("Remove"), this);
    auto* start = new QPushButton(tr("Start"), this);
    auto* stop = new QPushButton(tr("Stop"), this);
    auto* save = new QPushButton(tr("Save"), this);
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(add);
    buttons->addWidget(importButton);
    buttons->addWidget(remove);
    buttons->addStretch(1);
    buttons->addWidget(start);
    buttons->addWidget(stop);
    buttons->addWidget(save);
    auto* intro = new QLabel(tr("Programs that give the model tools (files, search, calendars…). They run on "
                                "this computer with your rights; a tool call runs only as you allow it below."),
                             this);
    intro->setWordWrap(true);
    auto* right = new QVBoxLayout();
    right->addWidget(intro);
    right->addLayout(form);
    right->addWidget(m_tools, 1);
    right->addWidget(m_status);
    right->addLayout(buttons);
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    auto* top = new QHBoxLayout();
    top->addWidget(m_list);
    top->addLayout(right, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top, 1);
    layout->addWidget(close);

    connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(add, &QPushButton::clicked, this, [this] {
        m_list->clearSelection();
        showServer(QString());
        m_name->setFocus();
    });
    connect(importButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Import MCP servers"), QString(),
                                                          tr("JSON files (*.json);;All files (*)"));
        if (!path.isEmpty()) importFile(path);
    });
    connect(remove, &QPushButton::clicked, this, [this] { removeServer(selectedServer()); });
    connect(start, &QPushButton::clicked, this, [this] { startServer(selectedServer()); });
    connect(stop, &QPushButton::clicked, this, [this] { stopServer(selectedServer()); });
    connect(save, &QPushButton::clicked, this, &McpDialog::saveForm);
    connect(m_list, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        showServer(item ? item->data(Qt::UserRole).toString() : QString());
    });
    connect(m_host, &app::McpHost::toolsChanged, this, [this] {
        const QString current = selectedServer();
        reload();
        showServer(current);
    });
    connect(m_host, &app::McpHost::serverFailed, this, [this](const QString& server, const QString& why) {
        m_status->setText(tr("%1 stopped: %2").arg(server, why));
    });
    reload();
    if (m_list->count() > 0) m_list->setCurrentRow(0);
    else showServer(QString());
    if (!m_host->configErrors().isEmpty())
        m_status->setText(tr("Left out of mcp.json: %1").arg(m_host->configErrors().join(QStringLiteral("; "))));
}

QString McpDialog::selectedServer() const {
    const QListWidgetItem* item = m_list->currentItem();
    return item ? item->data(Qt::UserRole).toString() : QString();
}

QStringList McpDialog::serverNames() const {
    QStringList names;
    for (const app::McpServerConfig& s : m_host->servers()) names << s.name;
    return names;
}

QString McpDialog::serverStateText(const QString& name) const {
    const app::McpClient* c = m_host->client(name);
    if (!c) return {};
    if (c->config().disabled) return tr("turned off");
    switch (c->state()) {
    case app::McpClient::State::Starting: return tr("starting…");
    case app::McpClient::State::Ready:
        return tr("running · %1").arg(countText(int(c->tools().size()), tr("tool"), tr("tools")));
    case app::McpClient::State::Failed: return tr("failed: %1").arg(c->lastError());
    case app::McpClient::State::Stopped: break;
    }
    return tr("stopped");
}

QString McpDialog::statusText() const { return m_status->text(); }

void McpDialog::reload() {
    const QSignalBlocker block(m_list);
    const QString current = selectedServer();
    m_list->clear();
    for (const app::McpServerConfig& s : m_host->servers()) {
        auto* item = new QListWidgetItem(QStringLiteral("%1 · %2").arg(s.name, serverStateText(s.name)), m_list);
        item->setData(Qt::UserRole, s.name);
        if (s.name == current) m_list->setCurrentItem(item);
    }
}

void McpDialog::showServer(const QString& name) {
    app::McpServerConfig s;
    for (const app::McpServerConfig& c : m_host->servers())
        if (c.name == name) s = c;
    m_name->setText(s.name);
    m_command->setText(s.isStdio() ? commandLine(s) : QString());
    m_url->setText(s.url.isEmpty() ? QString() : s.url.toString());
    m_disabled->setChecked(s.disabled);
    m_state->setText(name.isEmpty() ? tr("not saved yet") : serverStateText(name));
    showTools();
}

void McpDialog::showTools() {
    m_filling = true;
    m_tools->setRowCount(0);
    const QString server = selectedServer();
    for (const app::McpHostTool& t : m_host->tools()) {
        if (t.server != server) continue;
        const int row = m_tools->rowCount();
        m_tools->insertRow(row);
        auto* on = new QTableWidgetItem();
        on->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        on->setCheckState(t.settings.enabled ? Qt::Checked : Qt::Unchecked);
        m_tools->setItem(row, 0, on);
        auto* name = new QTableWidgetItem(t.tool.title.isEmpty() ? t.tool.name : t.tool.title);
        name->setData(Qt::UserRole, t.tool.name);
        name->setToolTip(t.tool.name);
        m_tools->setItem(row, 1, name);
        auto* approval = new QComboBox(m_tools);
        for (const char* n : kApprovalNames) approval->addItem(tr(n));
        approval->setCurrentIndex(int(t.settings.approval));
        m_tools->setCellWidget(row, 2, approval);
        auto* what = new QTableWidgetItem(t.tool.description.section(QLatin1Char('\n'), 0, 0));
        what->setToolTip(t.tool.description);
        m_tools->setItem(row, 3, what);
        const QString tool = t.tool.name;
        connect(approval, &QComboBox::currentIndexChanged, this, [this, server, tool](int index) {
            app::McpToolSettings s = m_host->toolSettings(server, tool);
            s.approval = app::McpApproval(index);
            QString error;
            if (!m_host->setToolSettings(server, tool, s, &error)) m_status->setText(error);
        });
    }
    m_tools->resizeColumnsToContents();
    m_filling = false;
    disconnect(m_tools, &QTableWidget::itemChanged, this, nullptr);
    connect(m_tools, &QTableWidget::itemChanged, this, [this, server](QTableWidgetItem* item) {
        if (m_filling || item->column() != 0) return;
        const QString tool = m_tools->item(item->row(), 1)->data(Qt::UserRole).toString();
        app::McpToolSettings s = m_host->toolSettings(server, tool);
        s.enabled = item->checkState() == Qt::Checked;
        QString error;
        if (!m_host->setToolSettings(server, tool, s, &error)) m_status->setText(error);
    });
}

int McpDialog::shownToolCount() const { return m_tools->rowCount(); }

QString McpDialog::shownToolName(int row) const {
    const QTableWidgetItem* item = m_tools->item(row, 1);
    return item ? item->data(Qt::UserRole).toString() : QString();
}

void McpDialog::setShownToolEnabled(int row, bool on) {
    if (QTableWidgetItem* item = m_tools->item(row, 0)) item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
}

void McpDialog::setShownToolApproval(int row, app::McpApproval approval) {
    if (auto* box = qobject_cast<QComboBox*>(m_tools->cellWidget(row, 2))) box->setCurrentIndex(int(approval));
}

bool McpDialog::saveForm() {
    app::McpServerConfig s;
    s.name = m_name->text().trimmed();
    s.disabled = m_disabled->isChecked();
    const QStringList parts = QProcess::splitCommand(m_command->text().trimmed());
    const QString url = m_url->text().trimmed();
    if (s.name.isEmpty()) {
        m_status->setText(tr("Give the server a name."));
        return false;
    }
    if (parts.isEmpty() == url.isEmpty()) {
        m_status->setText(tr("Give either a command or a URL."));
        return false;
    }
    if (!parts.isEmpty()) {
        s.command = parts.first();
        s.args = parts.mid(1);
    } else {
        s.url = QUrl(url);
    }
    // Checked as a file entry would be, so that what is saved also reads back.
    const app::McpConfigParse check = app::parseMcpServers(app::mcpServersJson({s}));
    if (check.servers.size() != 1) {
        m_status->setText(check.errors.join(QStringLiteral("; ")));
        return false;
    }
    QList<app::McpServerConfig> all = m_host->servers();
    const QString previous = selectedServer();
    auto it = std::find_if(all.begin(), all.end(), [&](const app::McpServerConfig& c) {
        return c.name == (previous.isEmpty() ? s.name : previous);
    });
    if (it != all.end()) *it = check.servers.first();
    else all << check.servers.first();
    QString error;
    if (!m_host->setServers(all, &error)) {
        m_status->setText(error);
        return false;
    }
    reload();
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->data(Qt::UserRole).toString() == s.name) m_list->setCurrentRow(i);
    m_status->setText(tr("Saved %1.").arg(s.name));
    return true;
}

bool McpDialog::saveServer(const QString& name, const QString& command, const QString& url, bool disabled) {
    // The server of that name is chosen (or none, for a new one), then the form typed over.
    m_list->setCurrentItem(nullptr);
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->data(Qt::UserRole).toString() == name) m_list->setCurrentRow(i);
    m_name->setText(name);
    m_command->setText(command);
    m_url->setText(url);
    m_disabled->setChecked(disabled);
    return saveForm();
}

bool McpDialog::removeServer(const QString& name) {
    QList<app::McpServerConfig> all = m_host->servers();
    const auto n = all.size();
    all.removeIf([&](const app::McpServerConfig& s) { return s.name == name; });
    if (all.size() == n) return false;
    QString error;
    if (!m_host->setServers(all, &error)) {
        m_status->setText(error);
        return false;
    }
    reload();
    showServer(selectedServer());
    m_status->setText(tr("Removed %1.").arg(name));
    return true;
}

bool McpDialog::importFile(const QString& path) {
    QString error;
    const app::McpConfigParse p = m_host->importFile(path, &error);
    reload();
    QString text = tr("Imported %1.").arg(countText(int(p.servers.size()), tr("server"), tr("servers")));
    if (!p.errors.isEmpty()) text += QLatin1Char(' ') + tr("Left out: %1").arg(p.errors.join(QStringLiteral("; ")));
    m_status->setText(text);
    if (m_list->currentRow() < 0 && m_list->count() > 0) m_list->setCurrentRow(0);
    return !p.servers.isEmpty();
}

void McpDialog::startServer(const QString& name) {
    if (app::McpClient* c = m_host->client(name)) {
        c->start();
        m_state->setText(serverStateText(name));
        reload();
    }
}

void McpDialog::stopServer(const QString& name) {
    if (app::McpClient* c = m_host->client(name)) {
        c->stop();
        reload();
        showServer(name);
    }
}

} // namespace hearth::ui
