// ProvidersDialog: a list of providers on the left, the chosen one's form on the right.
#include "providers_dialog.h"

#include "count_text.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace hearth::ui {

ProvidersDialog::ProvidersDialog(app::ProviderStore* store, app::RemoteClient* client, QWidget* parent)
    : QDialog(parent), m_store(store), m_client(client) {
    setWindowTitle(tr("Remote providers"));
    resize(720, 360);
    m_list = new QListWidget(this);
    m_list->setMaximumWidth(200);
    m_name = new QLineEdit(this);
    m_name->setPlaceholderText(tr("gpu-box"));
    m_url = new QLineEdit(this);
    m_url->setPlaceholderText(tr("http://gpu-box:8000/v1"));
    m_key = new QLineEdit(this);
    m_key->setEchoMode(QLineEdit::Password);
    m_key->setPlaceholderText(tr("none"));
    m_extended = new QCheckBox(tr("Send top-k, min-p and repetition penalty (off for api.openai.com)"), this);
    m_extended->setChecked(true);
    m_keyWhere = new QLabel(this);
    m_keyWhere->setWordWrap(true);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* form = new QFormLayout();
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Base URL"), m_url);
    form->addRow(tr("API key"), m_key);
    form->addRow(QString(), m_extended);
    form->addRow(QString(), m_keyWhere);
    auto* add = new QPushButton(tr("New"), this);
    auto* save = new QPushButton(tr("Save"), this);
    auto* remove = new QPushButton(tr("Remove"), this);
    auto* test = new QPushButton(tr("Test connection"), this);
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(add);
    buttons->addWidget(remove);
    buttons->addStretch(1);
    buttons->addWidget(test);
    buttons->addWidget(save);
    auto* right = new QVBoxLayout();
    right->addWidget(new QLabel(tr("Models of an OpenAI-compatible server (vLLM, TGI, llama-server, another "
                                   "Hearth) appear in the model picker beside the local ones. Chats with them "
                                   "leave this computer for that server."),
                                this));
    right->itemAt(0)->widget()->setProperty("wordWrap", true);
    right->addLayout(form);
    right->addWidget(m_status);
    right->addStretch(1);
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
        showProvider(QString());
        m_name->setFocus();
    });
    connect(save, &QPushButton::clicked, this, &ProvidersDialog::saveForm);
    connect(remove, &QPushButton::clicked, this, [this] {
        if (QListWidgetItem* item = m_list->currentItem()) removeProvider(item->text());
    });
    connect(test, &QPushButton::clicked, this, &ProvidersDialog::testConnection);
    connect(m_list, &QListWidget::currentTextChanged, this, &ProvidersDialog::showProvider);
    connect(m_client, &app::RemoteClient::modelsListed, this, [this](quint64 ticket, const QStringList& models) {
        if (ticket != m_testTicket) return;
        m_status->setText(models.isEmpty() ? tr("Connected, but it lists no model.")
                                           : tr("Connected: %1: %2")
                                                 .arg(countText(models.size(), tr("model"), tr("models")),
                                                      models.mid(0, 8).join(QStringLiteral(", "))));
    });
    connect(m_client, &app::RemoteClient::listFailed, this, [this](quint64 ticket, const QString& message) {
        if (ticket == m_testTicket) m_status->setText(tr("<b>Failed:</b> %1").arg(message.toHtmlEscaped()));
    });
    reload();
}

void ProvidersDialog::reload() {
    const QString current = m_list->currentItem() ? m_list->currentItem()->text() : QString();
    m_list->clear();
    for (const app::RemoteProvider& p : m_store->providers()) m_list->addItem(p.name);
    const auto found = m_list->findItems(current, Qt::MatchExactly);
    if (!found.isEmpty()) m_list->setCurrentItem(found.first());
    else if (m_list->count() > 0) m_list->setCurrentRow(0);
    else showProvider(QString());
}

void ProvidersDialog::showProvider(const QString& name) {
    const auto p = m_store->find(name);
    m_name->setText(p ? p->name : QString());
    m_url->setText(p ? p->baseUrl.toString() : QString());
    m_key->setText(p ? m_store->apiKey(p->name) : QString());
    m_extended->setChecked(p ? p->extendedSampling : true);
    m_keyWhere->setText(m_store->keyBackend() == app::ProviderStore::KeyBackend::Keyring
                            ? tr("The key is kept in the system keyring.")
                            : tr("The key is kept in a file only you can read (no keyring found)."));
    m_status->clear();
}

bool ProvidersDialog::saveForm() {
    return saveProvider(m_name->text(), m_url->text(), m_key->text(), m_extended->isChecked());
}

bool ProvidersDialog::saveProvider(const QString& name, const QString& url, const QString& key, bool extendedSampling) {
    app::RemoteProvider p;
    p.name = name.trimmed();
    p.baseUrl = QUrl(url.trimmed());
    p.extendedSampling = extendedSampling;
    if (const QString why = app::validateProvider(p); !why.isEmpty()) {
        m_status->setText(tr("<b>Not saved:</b> %1").arg(why.toHtmlEscaped()));
        return false;
    }
    if (!m_store->setProvider(p) || !m_store->setApiKey(p.name, key.trimmed())) {
        m_status->setText(tr("<b>Not saved:</b> %1").arg(m_store->lastError().toHtmlEscaped()));
        return false;
    }
    reload();
    const auto found = m_list->findItems(p.name, Qt::MatchExactly);
    if (!found.isEmpty()) m_list->setCurrentItem(found.first());
    m_status->setText(tr("Saved."));
    Q_EMIT providersChanged();
    return true;
}

bool ProvidersDialog::removeProvider(const QString& name) {
    if (!m_store->removeProvider(name)) {
        m_status->setText(tr("<b>Not removed:</b> %1").arg(m_store->lastError().toHtmlEscaped()));
        return false;
    }
    reload();
    Q_EMIT providersChanged();
    return true;
}

void ProvidersDialog::testConnection() {
    app::RemoteProvider p;
    p.name = m_name->text().trimmed();
    p.baseUrl = QUrl(m_url->text().trimmed());
    if (const QString why = app::validateProvider(p); !why.isEmpty()) {
        m_status->setText(tr("<b>Failed:</b> %1").arg(why.toHtmlEscaped()));
        return;
    }
    m_status->setText(tr("Connecting…"));
    m_testTicket = m_client->listModels(p);
}

QString ProvidersDialog::statusText() const { return m_status->text(); }

QStringList ProvidersDialog::providerNames() const {
    QStringList out;
    for (const app::RemoteProvider& p : m_store->providers()) out << p.name;
    return out;
}

} // namespace hearth::ui
